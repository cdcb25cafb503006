package planner

import (
	"strings"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// Resource names as the kubelet spells them.
const (
	resourceCPU              = "cpu"
	resourceMemory           = "memory"
	resourceEphemeralStorage = "ephemeral-storage"
	resourcePods             = "pods"
	// resourcePID is the kubelet's internal process ID resource
	// (pkg/kubelet/stats/pidlimit.PIDs): reservable and enforced on
	// kubepods, never shown in node status.
	resourcePID     = "pid"
	hugePagesPrefix = "hugepages-"
)

// amounts are resource amounts by Kubernetes resource name: CPU in
// millicores, everything else in base units. A missing name means "not
// specified", which QoS rules and admission tell apart from zero.
type amounts map[string]int64

// amountsOf reads a wire resource list; a nil list has no amounts.
func amountsOf(list *typesv1.ResourceList) amounts {
	a := amounts{}
	if list == nil {
		return a
	}
	for name, field := range map[string]*int64{
		resourceCPU:              list.CpuMillis,
		resourceMemory:           list.MemoryBytes,
		resourceEphemeralStorage: list.EphemeralStorageBytes,
		resourcePID:              list.Pids,
	} {
		if field != nil {
			a[name] = *field
		}
	}
	for name, v := range list.Other {
		a[name] = v
	}
	return a
}

// list writes the amounts as a wire resource list.
func (a amounts) list() *typesv1.ResourceList {
	out := &typesv1.ResourceList{}
	for name, v := range a {
		switch name {
		case resourceCPU:
			out.CpuMillis = &v
		case resourceMemory:
			out.MemoryBytes = &v
		case resourceEphemeralStorage:
			out.EphemeralStorageBytes = &v
		case resourcePID:
			out.Pids = &v
		default:
			if out.Other == nil {
				out.Other = map[string]int64{}
			}
			out.Other[name] = v
		}
	}
	return out
}

// add adds b to a (upstream addResourceList).
func (a amounts) add(b amounts) {
	for name, v := range b {
		a[name] += v
	}
}

// raiseTo raises every amount of a to at least b's (upstream maxResourceList).
func (a amounts) raiseTo(b amounts) {
	for name, v := range b {
		if cur, ok := a[name]; !ok || v > cur {
			a[name] = v
		}
	}
}

func (a amounts) clone() amounts {
	out := make(amounts, len(a))
	out.add(a)
	return out
}

// isHugePages reports hugepages-<size> resource names.
func isHugePages(name string) bool { return strings.HasPrefix(name, hugePagesPrefix) }

// isExtended reports extended resources (upstream
// v1helper.IsExtendedResourceName): domain-qualified names that are not
// native (kubernetes.io/...) and not quota request names. Pod validation
// has already checked the name's syntax.
func isExtended(name string) bool {
	native := !strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/")
	return !native && !strings.HasPrefix(name, "requests.")
}

// isPodLevelResource reports the resources pod-level resources may set
// (upstream component-helpers IsSupportedPodLevelResource).
func isPodLevelResource(name string) bool {
	return name == resourceCPU || name == resourceMemory || isHugePages(name)
}

// podLevel returns the supported pod-level amounts of list, or nil when it
// sets none.
func podLevel(list *typesv1.ResourceList) amounts {
	var out amounts
	for name, v := range amountsOf(list) {
		if isPodLevelResource(name) {
			if out == nil {
				out = amounts{}
			}
			out[name] = v
		}
	}
	return out
}

// podLevelRequestsSet reports pods with pod-level requests (upstream
// IsPodLevelRequestsSet).
func podLevelRequestsSet(pod *typesv1.Pod) bool {
	return podLevel(pod.GetPodResources().GetRequests()) != nil
}

// podLevelResourcesSet reports pods with pod-level requests or limits
// (upstream IsPodLevelResourcesSet).
func podLevelResourcesSet(pod *typesv1.Pod) bool {
	return podLevelRequestsSet(pod) || podLevel(pod.GetPodResources().GetLimits()) != nil
}

func requestsOf(c *typesv1.Container) *typesv1.ResourceList { return c.GetResources().GetRequests() }
func limitsOf(c *typesv1.Container) *typesv1.ResourceList   { return c.GetResources().GetLimits() }

// aggregate sums a pod's containers as upstream AggregateContainerRequests
// and AggregateContainerLimits do: regular containers and sidecars add up;
// an init container needs its own amounts plus those of the sidecars
// started before it; the pod needs the larger of the two. each, if not nil,
// sees the effective amounts of every container in turn.
func aggregate(pod *typesv1.Pod, of func(*typesv1.Container) *typesv1.ResourceList, each func(amounts)) amounts {
	total := amounts{}
	for _, c := range pod.GetContainers() {
		a := amountsOf(of(c))
		if each != nil {
			each(a)
		}
		total.add(a)
	}
	sidecars, initPeak := amounts{}, amounts{}
	for _, c := range pod.GetInitContainers() {
		a := amountsOf(of(c))
		if c.GetRestartable() {
			total.add(a)
			sidecars.add(a)
			a = sidecars.clone()
		} else {
			a.add(sidecars)
		}
		if each != nil {
			each(a)
		}
		initPeak.raiseTo(a)
	}
	total.raiseTo(initPeak)
	return total
}

// podRequests is what a pod requests (upstream PodRequests, pod overhead
// aside: the pod view carries none). Pod-level requests replace the
// containers' sum for the resources they set.
func podRequests(pod *typesv1.Pod) amounts {
	reqs := aggregate(pod, requestsOf, nil)
	for name, v := range podLevel(pod.GetPodResources().GetRequests()) {
		reqs[name] = v
	}
	return reqs
}

// podLimits is a pod's limits (upstream PodLimits); each sees every
// container's effective limits, as upstream's ContainerFn.
func podLimits(pod *typesv1.Pod, each func(amounts)) amounts {
	limits := aggregate(pod, limitsOf, each)
	if podLevelResourcesSet(pod) {
		for name, v := range podLevel(pod.GetPodResources().GetLimits()) {
			limits[name] = v
		}
	}
	return limits
}
