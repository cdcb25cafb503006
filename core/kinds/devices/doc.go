// Package devices is the core's side of the devices plugins, what
// the kubelet's device manager (pkg/kubelet/cm/devicemanager) does: it
// follows every devices plugin's resources through ListAndWatch, picks
// and allocates devices when a pod is admitted, checkpoints the
// allocations, frees them when the pod terminates, and hands what Allocate
// returned to the runtime manager for each container. It reports the
// extended resources' capacity and allocatable for node status.
//
// A plugin that is down keeps its resources and every allocation made
// with it; pods asking for its resources wait for it. docs/devices.md
// describes the behaviour, the checkpoint and every departure from the
// kubelet.
package devices
