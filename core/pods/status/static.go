package status

import (
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pods/podspec"
)

// apiserverSource is the config source of pods from an API server,
// upstream's ApiserverSource.
const apiserverSource = "api"

// IsStaticPod reports whether a pod comes from a source other than an API
// server, as upstream's kubetypes.IsStaticPod: every pod of microlet's
// file, http and push sources is static.
func IsStaticPod(pod *v1.Pod) bool {
	source, ok := pod.Annotations[podspec.ConfigSourceAnnotationKey]
	return ok && source != apiserverSource
}
