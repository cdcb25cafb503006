package podruntime

import (
	"encoding/json"
	"hash/fnv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/dump"

	"github.com/microlet/microlet/core/runtime/container"
)

// containerHash is upstream's HashContainer: FNV-32a of the spew dump
// (apimachinery's dump.ForHash, which leaves out capacities and addresses)
// of the JSON of the fields whose change replaces a running container, its
// name and image (other changes are in-place updates or need a new pod).
// The same value as the kubelet's, so crictl and tools reading
// io.kubernetes.container.hash see what they would on a kubelet node.
func containerHash(c *v1.Container) uint64 {
	// A map of strings always marshals.
	data, _ := json.Marshal(map[string]string{"name": c.Name, "image": c.Image})
	h := fnv.New32a()
	h.Write([]byte(dump.ForHash(data)))
	return uint64(h.Sum32())
}

// previousContainerHash is the hash microlet wrote before it used
// upstream's (FNV-32a of the JSON itself): a container an earlier microlet
// created carries it, and is not restarted for that alone after an upgrade.
func previousContainerHash(c *v1.Container) uint64 {
	data, _ := json.Marshal(map[string]string{"name": c.Name, "image": c.Image})
	h := fnv.New32a()
	h.Write(data)
	return uint64(h.Sum32())
}

// containerChanged reports whether a container instance was created from a
// different spec than c.
func containerChanged(c *v1.Container, s *container.ContainerStatus) bool {
	return s.Hash != containerHash(c) && s.Hash != previousContainerHash(c)
}

// shouldRestartOnFailure reports whether the pod's containers are restarted
// when they fail (restartPolicy Always or OnFailure).
func shouldRestartOnFailure(pod *v1.Pod) bool {
	return pod.Spec.RestartPolicy != v1.RestartPolicyNever
}

// shouldContainerBeRestarted is upstream's ShouldContainerBeRestarted: a
// container that never ran, or whose last instance is in an unknown or
// created state, is (re)started; an exited one per the pod's restartPolicy.
func shouldContainerBeRestarted(c *v1.Container, pod *v1.Pod, status *container.PodStatus) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	s := status.Container(c.Name)
	if s == nil {
		return true
	}
	switch s.State {
	case container.StateRunning:
		return false
	case container.StateUnknown, container.StateCreated:
		return true
	}
	switch pod.Spec.RestartPolicy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return s.ExitCode != 0
	}
	return true
}

// containerSucceeded reports whether the newest instance of c exited 0.
func containerSucceeded(c *v1.Container, status *container.PodStatus) bool {
	s := status.Container(c.Name)
	return s != nil && s.State == container.StateExited && s.ExitCode == 0
}

// isInitContainerFailed is upstream's: exited non-zero, OOM-killed or in an
// unknown state.
func isInitContainerFailed(s *container.ContainerStatus) bool {
	return s.Reason == "OOMKilled" ||
		(s.State == container.StateExited && s.ExitCode != 0) ||
		s.State == container.StateUnknown
}

// isSidecar reports whether an init container is restartable (restartPolicy
// Always): a sidecar.
func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// hasSidecars reports whether the pod has a restartable init container.
func hasSidecars(pod *v1.Pod) bool {
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	return false
}

// hasAnyRegularContainerCreated reports whether a regular container has an
// instance, which means the pod got past its init containers once.
func hasAnyRegularContainerCreated(pod *v1.Pod, status *container.PodStatus) bool {
	for i := range pod.Spec.Containers {
		s := status.Container(pod.Spec.Containers[i].Name)
		if s == nil {
			continue
		}
		switch s.State {
		case container.StateCreated, container.StateRunning, container.StateExited:
			return true
		}
	}
	return false
}

// containerSpec finds a container of the pod by name: init, regular or
// ephemeral.
func containerSpec(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
	}
	return nil
}
