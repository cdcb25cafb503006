package status

import (
	v1 "k8s.io/api/core/v1"
	utilnet "k8s.io/utils/net"

	"github.com/microlet/microlet/core/runtime/container"
)

// Generator turns a pod's runtime status into its API status, as
// upstream's generateAPIPodStatus. Its fields are the inputs beyond the
// pod itself; it only reads them, so one Generator serves every pod
// concurrently.
type Generator struct {
	// RuntimeName prefixes container IDs: "<RuntimeName>://<id>", e.g.
	// "containerd", the runtime's name from CRI Version.
	RuntimeName string
	// NodeIPs are the node's addresses, primary first, at most one per IP
	// family. They are the pods' hostIP(s), and the podIP(s) of
	// hostNetwork pods; the primary's family comes first in podIPs.
	NodeIPs []string
	// Readiness and Startup are the probes' results; nil means no prober
	// (no probes plugin configured): containers count as having no probes.
	Readiness ProbeResults
	Startup   ProbeResults
	// Reasons are the failures of the containers' last starts; nil means
	// none known.
	Reasons *ReasonCache
	// SupportsRecursiveReadOnly says the runtime can mount volumes
	// recursively read-only (containerd 1.6 cannot).
	SupportsRecursiveReadOnly bool
	// ShouldEvict, if set, may ask for the pod to fail, as upstream's pod
	// sync handlers (active deadline): the phase becomes Failed with the
	// reason and message it returns.
	ShouldEvict func(pod *v1.Pod) (evict bool, reason, message string)
	// Resizes gives containers' resources as allocated and actuated, and
	// the in-place resize conditions; nil: the spec's resources, no
	// resize conditions.
	Resizes ResizeStatus
}

// ResizeStatus is what the in-place resize record says of a pod.
type ResizeStatus interface {
	// Conditions are PodResizePending and PodResizeInProgress when they
	// hold; running says whether a container's newest instance runs.
	Conditions(pod *v1.Pod, running func(name string) bool) []v1.PodCondition
	// ContainerResources are a container's status resources and allocated
	// resources.
	ContainerResources(pod *v1.Pod, c *v1.Container, running bool) (*v1.ResourceRequirements, v1.ResourceList)
}

// PodStatus generates the pod's API status from what the runtime reports
// and the pod's previous status (the status manager's, or else
// pod.Status). podIsTerminal says the pod is being stopped for good.
//
// The phase comes from the containers (see getPhase) and never leaves a
// terminal phase once the previous status or the pod had one; the phase's
// reason and message carry over while the phase stays. The kubelet-owned
// conditions are generated (PodReadyToStartContainers, Initialized, Ready
// with the readiness gates, ContainersReady, PodScheduled); others carry
// over from the pod, DisruptionTarget from the previous status. The start
// time carries over from the previous status; the status manager sets it
// the first time.
func (g *Generator) PodStatus(pod *v1.Pod, runtime *container.PodStatus, old v1.PodStatus, podIsTerminal bool) v1.PodStatus {
	if runtime == nil {
		runtime = &container.PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	s := g.convert(pod, runtime, old)
	s.StartTime = old.StartTime

	all := append(append([]v1.ContainerStatus{}, s.ContainerStatuses...), s.InitContainerStatuses...)
	s.Phase = getPhase(pod, all, podIsTerminal, anyActiveRegularContainerStarted(&pod.Spec, runtime))
	switch {
	case IsTerminalPhase(old.Phase):
		// A terminal phase is final, whatever the containers do next: an
		// evicted pod (Failed) whose containers exit 0 on SIGTERM stays
		// Failed. Upstream keeps it only when the new phase is not terminal
		// and leaves its status manager to refuse the change.
		s.Phase = old.Phase
	case !IsTerminalPhase(s.Phase) && IsTerminalPhase(pod.Status.Phase):
		s.Phase = pod.Status.Phase
	}
	if s.Phase == old.Phase {
		s.Reason, s.Message = old.Reason, old.Message
		if s.Reason == "" {
			s.Reason = pod.Status.Reason
		}
		if s.Message == "" {
			s.Message = pod.Status.Message
		}
	}
	if g.ShouldEvict != nil {
		if evict, reason, message := g.ShouldEvict(pod); evict {
			s.Phase, s.Reason, s.Message = v1.PodFailed, reason, message
		}
	}
	if IsTerminalPhase(pod.Status.Phase) {
		s.Phase = pod.Status.Phase
	}

	g.applyProbeResults(pod, &s)

	s.Conditions = make([]v1.PodCondition, 0, len(pod.Status.Conditions)+5)
	for _, c := range pod.Status.Conditions {
		if !IsConditionByKubelet(c.Type) {
			s.Conditions = append(s.Conditions, c)
		}
	}
	if c := findCondition(old.Conditions, v1.DisruptionTarget); c != nil {
		s.Conditions = replaceOrAppendCondition(s.Conditions, c)
	}
	all = append(append([]v1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...)
	s.Conditions = append(s.Conditions,
		readyToStartContainersCondition(pod, runtime),
		initializedCondition(pod, all, s.Phase),
		podReadyCondition(pod, s.Conditions, all, s.Phase),
		containersReadyCondition(pod, all, s.Phase),
		condition(pod, v1.PodScheduled, v1.ConditionTrue, "", ""),
	)
	if g.Resizes != nil && !IsTerminalPhase(s.Phase) {
		s.Conditions = append(s.Conditions, g.Resizes.Conditions(pod, func(name string) bool {
			c := runtime.Container(name)
			return c != nil && c.State == container.StateRunning
		})...)
	}

	g.setHostIPs(pod, &s)
	return s
}

// convert is upstream's convertStatusToAPIStatus: pod IPs, QoS class and
// container statuses.
func (g *Generator) convert(pod *v1.Pod, runtime *container.PodStatus, old v1.PodStatus) v1.PodStatus {
	var s v1.PodStatus
	for _, ip := range g.podIPs(runtime, old) {
		s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
	}
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}
	s.QOSClass = GetPodQOS(pod)
	hasInit := len(pod.Spec.InitContainers) > 0
	s.ContainerStatuses = g.containerStatuses(pod, runtime, old.ContainerStatuses, pod.Spec.Containers, hasInit, false)
	s.InitContainerStatuses = g.containerStatuses(pod, runtime, old.InitContainerStatuses, pod.Spec.InitContainers, hasInit, true)
	var ephemeral []v1.Container
	for i := range pod.Spec.EphemeralContainers {
		ephemeral = append(ephemeral, v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	s.EphemeralContainerStatuses = g.containerStatuses(pod, runtime, old.EphemeralContainerStatuses, ephemeral, hasInit, false)
	return s
}

// podIPs are the pod's addresses: those of its newest sandbox when it is
// ready, ordered by the node's IP family preference. When no sandbox is
// ready the previous status' addresses stay, as upstream's PLEG keeps
// them: the API expects a finished pod to keep its IP.
func (g *Generator) podIPs(runtime *container.PodStatus, old v1.PodStatus) []string {
	anyReady := false
	for _, s := range runtime.Sandboxes {
		anyReady = anyReady || s.State == container.SandboxReady
	}
	if !anyReady {
		var ips []string
		for _, ip := range old.PodIPs {
			ips = append(ips, ip.IP)
		}
		return ips
	}
	if newest := runtime.Sandboxes[0]; newest.State == container.SandboxReady {
		return g.sortPodIPs(newest.IPs)
	}
	return nil
}

// sortPodIPs is upstream's sortPodIPs: the first address of the node's
// primary family, then the first of the other family, normalised.
func (g *Generator) sortPodIPs(podIPs []string) []string {
	primaryIPv6 := len(g.NodeIPs) > 0 && utilnet.IsIPv6String(g.NodeIPs[0])
	var out []string
	for _, wantV6 := range []bool{primaryIPv6, !primaryIPv6} {
		for _, s := range podIPs {
			ip := utilnet.ParseIPSloppy(s)
			if ip != nil && utilnet.IsIPv6(ip) == wantV6 {
				out = append(out, ip.String())
				break
			}
		}
	}
	return out
}

// setHostIPs sets hostIP(s) to the node's addresses, and gives a
// hostNetwork pod the node's addresses as its own. Upstream does this only
// with an API server (it reads the Node object); microlet knows its node
// addresses from its configuration, so it always does.
func (g *Generator) setHostIPs(pod *v1.Pod, s *v1.PodStatus) {
	if len(g.NodeIPs) == 0 {
		return
	}
	s.HostIP = g.NodeIPs[0]
	s.HostIPs = []v1.HostIP{{IP: s.HostIP}}
	if len(g.NodeIPs) > 1 {
		s.HostIPs = append(s.HostIPs, v1.HostIP{IP: g.NodeIPs[1]})
	}
	if !pod.Spec.HostNetwork {
		return
	}
	if s.PodIP == "" {
		s.PodIP = g.NodeIPs[0]
		s.PodIPs = []v1.PodIP{{IP: s.PodIP}}
	}
	if len(g.NodeIPs) > 1 && len(s.PodIPs) == 1 && utilnet.IsIPv6String(s.PodIPs[0].IP) != utilnet.IsIPv6String(g.NodeIPs[1]) {
		s.PodIPs = append(s.PodIPs, v1.PodIP{IP: g.NodeIPs[1]})
	}
}

// anyActiveRegularContainerStarted is upstream's
// HasAnyActiveRegularContainerStarted: a regular container exists in the
// pod's current sandbox, which means the pod initialized.
func anyActiveRegularContainerStarted(spec *v1.PodSpec, runtime *container.PodStatus) bool {
	if len(runtime.Sandboxes) == 0 || runtime.Sandboxes[0].State != container.SandboxReady {
		return false
	}
	active := runtime.Sandboxes[0].ID
	for _, c := range runtime.Containers {
		if c.SandboxID == active && containerSpec(spec.Containers, c.Name) != nil {
			return true
		}
	}
	return false
}

// IsTerminalPhase reports whether a pod in phase has finished: Succeeded
// or Failed.
func IsTerminalPhase(phase v1.PodPhase) bool {
	return phase == v1.PodSucceeded || phase == v1.PodFailed
}
