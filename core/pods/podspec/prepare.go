package podspec

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Prepare makes pod i of the manifest ready to run, as upstream's
// tryDecodeSinglePod and tryDecodePodList do: it checks the pod has a name,
// applies SetDefaults and ApplyStaticIdentity, and validates the result. The
// manifest's own copy is left untouched. A *ManifestError locates every
// problem in the manifest.
func (m *Manifest) Prepare(i int, origin Origin) (*v1.Pod, error) {
	pod := m.Pods[i].DeepCopy()
	if pod.Name == "" {
		return nil, m.problems(i, field.ErrorList{field.Required(field.NewPath("metadata", "name"), "a static pod needs a name")})
	}
	SetDefaults(pod)
	ApplyStaticIdentity(pod, origin)
	if errs := Validate(pod); len(errs) > 0 {
		return nil, m.problems(i, errs)
	}
	return pod, nil
}

// problems locates field errors about pod i in the manifest.
func (m *Manifest) problems(i int, errs field.ErrorList) *ManifestError {
	prefix := ""
	if m.list {
		prefix = fmt.Sprintf("items[%d]", i)
	}
	return &ManifestError{Problems: locate(m.tree, prefix, errs)}
}
