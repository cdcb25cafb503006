package config

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ParseTaint reads a register_with_taints entry, "key[=value]:Effect", as
// the kubelet's --register-with-taints does.
func ParseTaint(s string) (corev1.Taint, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok {
		return corev1.Taint{}, fmt.Errorf("expected \"key[=value]:Effect\", got %q", s)
	}
	key, value, _ := strings.Cut(kv, "=")
	t := corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return t, fmt.Errorf("taint key %q: %s", key, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return t, fmt.Errorf("taint value %q: %s", value, strings.Join(errs, "; "))
	}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return t, nil
	}
	return t, fmt.Errorf("taint effect %q: expected NoSchedule, PreferNoSchedule or NoExecute", effect)
}
