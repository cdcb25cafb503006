package status

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ProbeResults holds a prober's latest verdict per container instance.
type ProbeResults interface {
	// Result returns whether the probe last succeeded for the container
	// with this CRI ID (without the "<runtime>://" prefix), and whether
	// there is a result at all.
	Result(containerID string) (success, found bool)
}

// runtimeContainerID strips the "<runtime>://" prefix of an API container
// ID, giving the CRI ID.
func runtimeContainerID(apiID string) string {
	if _, id, ok := strings.Cut(apiID, "://"); ok {
		return id
	}
	return apiID
}

func result(r ProbeResults, apiID string) (success, found bool) {
	if r == nil {
		return false, false
	}
	return r.Result(runtimeContainerID(apiID))
}

// containerStarted is upstream's prober isContainerStarted: a running
// container has started once its startup probe succeeded, or at once
// without a startup probe or without a prober.
func (g *Generator) containerStarted(c *v1.Container, s *v1.ContainerStatus) bool {
	if s.State.Running == nil {
		return false
	}
	if success, found := result(g.Startup, s.ContainerID); found {
		return success
	}
	return c == nil || c.StartupProbe == nil || g.Startup == nil
}

// containerReady is upstream's readiness rule: a started, running
// container is ready once its readiness probe succeeded, or at once
// without a readiness probe or without a prober.
func (g *Generator) containerReady(c *v1.Container, s *v1.ContainerStatus) bool {
	if s.State.Running == nil {
		return false
	}
	if success, found := result(g.Readiness, s.ContainerID); found && success {
		return true
	}
	return c == nil || c.ReadinessProbe == nil || g.Readiness == nil
}

// applyProbeResults sets started and ready on the container statuses, as
// upstream's prober manager UpdatePodStatus. A regular init container is
// ready once it exited 0; a sidecar as a regular container.
func (g *Generator) applyProbeResults(pod *v1.Pod, s *v1.PodStatus) {
	for i := range s.ContainerStatuses {
		cs := &s.ContainerStatuses[i]
		spec := containerSpec(pod.Spec.Containers, cs.Name)
		started := g.containerStarted(spec, cs)
		cs.Started = &started
		if started {
			cs.Ready = g.containerReady(spec, cs)
		}
	}
	for i := range s.InitContainerStatuses {
		cs := &s.InitContainerStatuses[i]
		spec := containerSpec(pod.Spec.InitContainers, cs.Name)
		started := g.containerStarted(spec, cs)
		cs.Started = &started
		if spec == nil {
			continue
		}
		if !isRestartableInitContainer(spec) {
			if cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
				cs.Ready = true
			}
			continue
		}
		if started {
			cs.Ready = g.containerReady(spec, cs)
		}
	}
}

func containerSpec(containers []v1.Container, name string) *v1.Container {
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	return nil
}

// isRestartableInitContainer reports whether an init container is a
// sidecar (restartPolicy Always), upstream's IsRestartableInitContainer.
func isRestartableInitContainer(c *v1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}
