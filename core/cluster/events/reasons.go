package events

// The kubelet's event reasons, copied from upstream's
// pkg/kubelet/events/event.go (k8s.io/kubernetes v1.34.4), which is not
// importable without the whole kubelet; only those microlet records
// (docs/events.md). Users, alerts and tools match on these strings, so they
// stay exactly upstream's; reasons upstream spells inline (the node
// pressure pairs, EvictionThresholdMet, Evicted) are here too, with where
// they come from.

// Container event reasons.
const (
	CreatedContainer        = "Created"
	StartedContainer        = "Started"
	FailedToCreateContainer = "Failed"
	FailedToStartContainer  = "Failed"
	KillingContainer        = "Killing"
	BackOffStartContainer   = "BackOff"
	ExceededGracePeriod     = "ExceededGracePeriod"
)

// Pod event reasons.
const (
	FailedToKillPod                = "FailedKillPod"
	FailedToMakePodDataDirectories = "Failed"
	NetworkNotReady                = "NetworkNotReady"
)

// Image event reasons.
const (
	PullingImage            = "Pulling"
	PulledImage             = "Pulled"
	FailedToPullImage       = "Failed"
	FailedToInspectImage    = "InspectFailed"
	ErrImageNeverPullPolicy = "ErrImageNeverPull"
	BackOffPullImage        = "BackOff"
)

// FailedToRetrieveImagePullSecret is the pod event of pull secrets that
// could not be read, spelled inline in upstream's kubelet_pods.go.
const FailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"

// Node and kubelet event reasons.
const (
	NodeReady                            = "NodeReady"
	NodeNotReady                         = "NodeNotReady"
	NodeSchedulable                      = "NodeSchedulable"
	NodeNotSchedulable                   = "NodeNotSchedulable"
	StartingKubelet                      = "Starting"
	FailedMountVolume                    = "FailedMount"
	NodeRebooted                         = "Rebooted"
	NodeShutdown                         = "Shutdown"
	ContainerGCFailed                    = "ContainerGCFailed"
	ImageGCFailed                        = "ImageGCFailed"
	FailedNodeAllocatableEnforcement     = "FailedNodeAllocatableEnforcement"
	SuccessfulNodeAllocatableEnforcement = "NodeAllocatableEnforced"
	SandboxChanged                       = "SandboxChanged"
	FailedCreatePodSandBox               = "FailedCreatePodSandBox"
	FailedStatusPodSandBox               = "FailedPodSandBoxStatus"
	ResizeCompleted                      = "ResizeCompleted"
)

// Node pressure condition event reasons, spelled inline in upstream's
// pkg/kubelet/nodestatus/setters.go.
const (
	NodeHasSufficientMemory   = "NodeHasSufficientMemory"
	NodeHasInsufficientMemory = "NodeHasInsufficientMemory"
	NodeHasNoDiskPressure     = "NodeHasNoDiskPressure"
	NodeHasDiskPressure       = "NodeHasDiskPressure"
	NodeHasSufficientPID      = "NodeHasSufficientPID"
	NodeHasInsufficientPID    = "NodeHasInsufficientPID"
)

// Image manager event reasons.
const FreeDiskSpaceFailed = "FreeDiskSpaceFailed"

// Eviction event reasons, from upstream's pkg/kubelet/eviction
// (eviction_manager.go spells EvictionThresholdMet inline; Evicted is its
// Reason constant, also the evicted pod's status reason).
const (
	EvictionThresholdMet = "EvictionThresholdMet"
	Evicted              = "Evicted"
)

// Probe event reasons.
const (
	ContainerUnhealthy    = "Unhealthy"
	ContainerProbeWarning = "ProbeWarning"
)

// Lifecycle hook event reasons.
const (
	FailedPostStartHook = "FailedPostStartHook"
	FailedPreStopHook   = "FailedPreStopHook"
)
