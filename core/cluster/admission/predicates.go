// Package admission holds the kubelet's admission predicates for the pods
// of a node in a cluster (upstream pkg/kubelet/lifecycle/predicate.go): the
// pod's OS, node name, node selector and affinity, host ports and NoExecute
// taints are checked against the Node before the pod may run. Resources are
// not checked here: the cgroup admitter fits them, extended ones included.
package admission

import (
	"fmt"
	"runtime"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/microlet/microlet/core/pods/status"
)

// Upstream's reasons (pkg/kubelet/lifecycle) and the scheduler plugin names
// and messages the kubelet reports as "Predicate <name> failed: <message>".
const (
	ReasonOSSelectorMismatch = "PodOSSelectorNodeLabelDoesNotMatch"
	ReasonOSNotSupported     = "PodOSNotSupported"
	// ReasonUnsupportedVolume is microlet's: a volume kind the node cannot
	// set up. Upstream has no such reason since its kubelet sets up every
	// kind; here the pod fails at once instead of waiting forever.
	ReasonUnsupportedVolume = "UnsupportedVolume"

	predicateNodeAffinity    = "NodeAffinity"
	predicateNodeName        = "NodeName"
	predicateNodePorts       = "NodePorts"
	predicateTaintToleration = "TaintToleration"

	msgNodeAffinity = "node(s) didn't match Pod's node affinity/selector"
	msgNodeName     = "node(s) didn't match the requested node name"
	msgNodePorts    = "node(s) didn't have free ports for the requested pod ports"
	msgTaints       = "node(s) had taints that the pod didn't tolerate"
)

// Verdict is the outcome of the predicates: Reason empty means the pod fits.
type Verdict struct {
	Reason  string
	Message string
}

// Fits reports whether the verdict admits the pod.
func (v Verdict) Fits() bool { return v.Reason == "" }

func predicateFailed(name, desc string) Verdict {
	return Verdict{Reason: name, Message: fmt.Sprintf("Predicate %s failed: %s", name, desc)}
}

// Check runs the predicates on pod against node, next to the pods already
// admitted (others), in upstream's order; the first failure is the verdict.
func Check(pod *v1.Pod, node *v1.Node, others []*v1.Pod) Verdict {
	if osSelectorMismatch(pod, node) {
		return Verdict{Reason: ReasonOSSelectorMismatch, Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != runtime.GOOS {
		return Verdict{Reason: ReasonOSNotSupported, Message: "Failed to admit pod as the OS field doesn't match node OS"}
	}
	if matches, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !matches {
		return predicateFailed(predicateNodeAffinity, msgNodeAffinity)
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return predicateFailed(predicateNodeName, msgNodeName)
	}
	if hostPortsConflict(pod, others) {
		return predicateFailed(predicateNodePorts, msgNodePorts)
	}
	if !status.IsStaticPod(pod) {
		if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(node.Spec.Taints, pod.Spec.Tolerations, func(t *v1.Taint) bool {
			return t.Effect == v1.TaintEffectNoExecute
		}); untolerated {
			return predicateFailed(predicateTaintToleration, msgTaints)
		}
		if v := unsupportedVolume(pod); v != "" {
			return Verdict{Reason: ReasonUnsupportedVolume, Message: fmt.Sprintf("volume %q: only emptyDir, hostPath, configMap, secret, downwardAPI and projected volumes are supported on this node", v)}
		}
	}
	return Verdict{}
}

// osSelectorMismatch is upstream's rejectPodAdmissionBasedOnOSSelector: a
// pod labelled for an OS must be on a node of that OS, the node's label
// taken as the running OS when it lacks or contradicts it.
func osSelectorMismatch(pod *v1.Pod, node *v1.Node) bool {
	want, ok := pod.Labels[v1.LabelOSStable]
	if !ok {
		return false
	}
	have, labelled := node.Labels[v1.LabelOSStable]
	if !labelled || have != runtime.GOOS {
		have = runtime.GOOS
	}
	return want != have
}

// unsupportedVolume names the first volume of a kind the node's runtime
// cannot set up (see podruntime's volume manager), "" if none.
func unsupportedVolume(pod *v1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		s := v.VolumeSource
		if s.EmptyDir == nil && s.HostPath == nil && s.ConfigMap == nil && s.Secret == nil && s.DownwardAPI == nil && s.Projected == nil {
			return v.Name
		}
	}
	return ""
}
