package nodestatus

import (
	"maps"
	goruntime "runtime"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

// controllerManagedAttach is the annotation by which a node leaves volume
// attach and detach to the controller-manager, as the kubelet does by
// default (upstream volumeutil.ControllerManagedAttachAnnotation).
const controllerManagedAttach = "volumes.kubernetes.io/controller-managed-attach-detach"

// defaultLabels are the labels the kubelet owns on its Node and sets again
// on an existing one (updateDefaultLabels).
var defaultLabels = []string{
	v1.LabelHostname,
	v1.LabelTopologyZone,
	v1.LabelTopologyRegion,
	v1.LabelFailureDomainBetaZone,
	v1.LabelFailureDomainBetaRegion,
	v1.LabelInstanceTypeStable,
	v1.LabelInstanceType,
	v1.LabelOSStable,
	v1.LabelArchStable,
	v1.LabelWindowsBuild,
	kubeletapis.LabelOS,
	kubeletapis.LabelArch,
}

// InitialNode is the Node the kubelet registers (initialNode): its default
// labels and node_labels, register_with_taints, the attach-detach
// annotation, and the status the facts give, with the events of its first
// conditions.
func InitialNode(name string, reg Registration, f Facts, now time.Time) (*v1.Node, []Event) {
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      DefaultLabels(f.Hostname),
			Annotations: map[string]string{controllerManagedAttach: "true"},
		},
	}
	// node_labels may override the defaults, as the kubelet's --node-labels.
	maps.Copy(node.Labels, reg.Labels)
	if len(reg.Taints) > 0 {
		node.Spec.Taints = append([]v1.Taint(nil), reg.Taints...)
	}
	return node, SetStatus(node, f, now)
}

// DefaultLabels are the labels the kubelet gives its Node whatever
// node_labels say: the hostname, and the OS and architecture under their
// stable and beta names.
func DefaultLabels(hostname string) map[string]string {
	return map[string]string{
		v1.LabelHostname:      hostname,
		v1.LabelOSStable:      goruntime.GOOS,
		v1.LabelArchStable:    goruntime.GOARCH,
		kubeletapis.LabelOS:   goruntime.GOOS,
		kubeletapis.LabelArch: goruntime.GOARCH,
	}
}

// ReconcileExisting brings a Node registered before (by an earlier run, or
// another agent of the same name) in line with initial, as the kubelet's
// tryRegisterWithAPIServer does: the attach-detach annotation, the default
// labels, and the huge page resources. It says whether existing changed.
// Labels and taints the cluster's users set stay.
func ReconcileExisting(existing, initial *v1.Node) bool {
	changed := reconcileAttachAnnotation(existing, initial)
	changed = reconcileDefaultLabels(existing, initial) || changed
	changed = reconcileDefaultResources(existing, initial) || changed
	return reconcileHugePages(existing, initial) || changed
}

func reconcileAttachAnnotation(existing, initial *v1.Node) bool {
	want, set := initial.Annotations[controllerManagedAttach]
	if have, ok := existing.Annotations[controllerManagedAttach]; ok == set && have == want {
		return false
	}
	if !set {
		delete(existing.Annotations, controllerManagedAttach)
		return true
	}
	if existing.Annotations == nil {
		existing.Annotations = map[string]string{}
	}
	existing.Annotations[controllerManagedAttach] = want
	return true
}

func reconcileDefaultLabels(existing, initial *v1.Node) bool {
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	changed := false
	for _, label := range defaultLabels {
		want, ok := initial.Labels[label]
		if !ok {
			continue
		}
		if existing.Labels[label] != want {
			existing.Labels[label] = want
			changed = true
		}
		if existing.Labels[label] == "" {
			delete(existing.Labels, label)
		}
	}
	return changed
}

// reconcileDefaultResources gives a Node without capacity or allocatable
// the initial ones (updateDefaultResources).
func reconcileDefaultResources(existing, initial *v1.Node) bool {
	changed := false
	if existing.Status.Capacity == nil {
		existing.Status.Capacity = initial.Status.Capacity.DeepCopy()
		changed = initial.Status.Capacity != nil
	}
	if existing.Status.Allocatable == nil {
		existing.Status.Allocatable = initial.Status.Allocatable.DeepCopy()
		changed = changed || initial.Status.Allocatable != nil
	}
	if existing.Status.Capacity == nil {
		existing.Status.Capacity = v1.ResourceList{}
	}
	if existing.Status.Allocatable == nil {
		existing.Status.Allocatable = v1.ResourceList{}
	}
	return changed
}

// reconcileHugePages sets every huge page size the node has and removes
// the sizes it no longer has (reconcileHugePageResource).
func reconcileHugePages(existing, initial *v1.Node) bool {
	changed := false
	for name, want := range initial.Status.Capacity {
		if !isHugePages(name) {
			continue
		}
		have, ok := existing.Status.Capacity[name]
		if !ok || have.Cmp(want) != 0 {
			existing.Status.Capacity[name] = want.DeepCopy()
			changed = true
		}
		wantAlloc := initial.Status.Allocatable[name]
		if haveAlloc := existing.Status.Allocatable[name]; !ok || haveAlloc.Cmp(wantAlloc) != 0 {
			existing.Status.Allocatable[name] = wantAlloc.DeepCopy()
			changed = true
		}
	}
	for name := range existing.Status.Capacity {
		if _, ok := initial.Status.Capacity[name]; isHugePages(name) && !ok {
			delete(existing.Status.Capacity, name)
			delete(existing.Status.Allocatable, name)
			changed = true
		}
	}
	return changed
}

// ensureRequiredLabels sets the os and arch labels when a user removed or
// changed them, as the kubelet's updateNode does on every status update.
func ensureRequiredLabels(node *v1.Node) bool {
	changed := false
	for label, want := range map[string]string{v1.LabelOSStable: goruntime.GOOS, v1.LabelArchStable: goruntime.GOARCH} {
		if node.Labels[label] == want {
			continue
		}
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[label] = want
		changed = true
	}
	return changed
}

func isHugePages(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}
