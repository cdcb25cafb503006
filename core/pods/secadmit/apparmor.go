package secadmit

import (
	"errors"
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pods/podruntime"
)

// ReasonAppArmor is the kubelet's reason for a pod whose AppArmor profile
// cannot be enforced (lifecycle.AppArmorNotAdmittedReason).
const ReasonAppArmor = "AppArmor"

// AppArmorEnabled reports whether the host enforces AppArmor, as runc's
// and upstream's check: the securityfs directory and the module enabled.
func AppArmorEnabled() bool {
	if _, err := os.Stat("/sys/kernel/security/apparmor"); err != nil {
		return false
	}
	b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled")
	return err == nil && len(b) > 1 && b[0] == 'Y'
}

// CheckAppArmor is upstream's AppArmor admission: a pod that asks for a
// profile other than Unconfined needs a host that enforces AppArmor, and a
// Localhost profile needs a name.
func CheckAppArmor(pod *v1.Pod, hostEnabled bool) Verdict {
	if err := validateAppArmor(pod, hostEnabled); err != nil {
		return Verdict{Reason: ReasonAppArmor, Message: fmt.Sprintf("Cannot enforce AppArmor: %v", err)}
	}
	return Verdict{}
}

func validateAppArmor(pod *v1.Pod, hostEnabled bool) error {
	if !appArmorRequired(pod) {
		return nil
	}
	if !hostEnabled {
		return errors.New("AppArmor is not enabled on the host")
	}
	for _, c := range allContainers(pod) {
		p := podruntime.AppArmorProfile(pod, c)
		if p != nil && p.Type == v1.AppArmorProfileTypeLocalhost && (p.LocalhostProfile == nil || strings.TrimSpace(*p.LocalhostProfile) == "") {
			return fmt.Errorf("invalid empty AppArmor profile name: %q", p)
		}
	}
	return nil
}

// appArmorRequired is upstream's isRequired: any profile but Unconfined,
// in the fields or in the deprecated annotations.
func appArmorRequired(pod *v1.Pod) bool {
	if psc := pod.Spec.SecurityContext; psc != nil && psc.AppArmorProfile != nil && psc.AppArmorProfile.Type != v1.AppArmorProfileTypeUnconfined {
		return true
	}
	for _, c := range allContainers(pod) {
		if sc := c.SecurityContext; sc != nil && sc.AppArmorProfile != nil && sc.AppArmorProfile.Type != v1.AppArmorProfileTypeUnconfined {
			return true
		}
	}
	for key, value := range pod.Annotations {
		if strings.HasPrefix(key, v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) && value != v1.DeprecatedAppArmorBetaProfileNameUnconfined {
			return true
		}
	}
	return false
}

func allContainers(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		out = append(out, (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return out
}
