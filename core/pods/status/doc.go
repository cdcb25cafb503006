// Package status makes and keeps the pods' API statuses.
//
// Generator turns what the runtime reports of a pod (core/runtime/container) into
// its v1.PodStatus, as upstream's generateAPIPodStatus
// (pkg/kubelet/kubelet_pods.go) with pkg/kubelet/status/generate.go: the
// phase (Pending, Running, Succeeded, Failed, through init containers,
// sidecars and restart policies), the conditions, the container statuses
// with their states, last states, restart counts, readiness and start, the
// pod and host IPs and the QoS class. It reads the probes' results and the
// reasons the runtime manager recorded for failed container starts
// (ReasonCache).
//
// Manager keeps the latest status of every pod, versioned, as upstream's
// status manager does before it syncs statuses to the API server; the
// statuses the node agent decides itself (RejectedStatus,
// EvictedStatusFunc) go through it too.
//
// Feature gates are as upstream's 1.34 defaults: PodReadyToStartContainers,
// PodObservedGenerationTracking, RecursiveReadOnlyMounts and
// PodLevelResources on; ContainerRestartRules and ContainerStopSignals off.
package status
