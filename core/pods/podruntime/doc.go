// Package podruntime is the runtime manager: it makes one pod's sandbox and
// containers on a CRI runtime match the pod's spec, as the kubelet's
// kuberuntime package does.
//
// SyncPod is the heart. It computes what to do from the pod and the runtime's
// view of it (computePodActions, a pure function), then kills what must go,
// creates the sandbox, and starts init containers, sidecars and regular
// containers in upstream's order, with upstream's restart policies, crash-loop
// and image-pull backoffs, lifecycle hooks, volumes, environment and
// termination messages. KillPod stops a pod's containers (in parallel, with
// sidecars last in reverse order) and its sandboxes; CleanupPod removes what a
// terminated pod left on the node.
//
// The manager keeps no database: everything it needs to find pods again
// after a restart of the core is in the labels and annotations it puts on
// sandboxes and containers (upstream's io.kubernetes.* keys), so ListPods and
// GetPodStatus rebuild the same view from the runtime alone. The only memory
// it keeps is the backoff state, as the kubelet does.
//
// docs/pod-lifecycle.md describes the behaviour and every place it departs
// from the kubelet, and why.
package podruntime
