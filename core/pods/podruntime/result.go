package podruntime

import (
	"errors"
	"fmt"

	"github.com/microlet/microlet/core/cluster/events"
)

// Actions are what a step of SyncPod or KillPod did, by upstream's
// SyncAction names (pkg/kubelet/container/sync_result.go).
const (
	ActionCreatePodSandbox = "CreatePodSandbox"
	ActionConfigPodSandbox = "ConfigPodSandbox"
	ActionKillPodSandbox   = "KillPodSandbox"
	ActionStartContainer   = "StartContainer"
	ActionKillContainer    = "KillContainer"
	ActionResizePodInPlace = "ResizePodInPlace"
	// ActionMountVolumes is microlet's: upstream mounts volumes before its
	// runtime sync, outside the sync result.
	ActionMountVolumes = "MountVolumes"
)

// Reasons, exactly as upstream puts them in container statuses. The first
// two are not errors: the status generator shows them for containers that
// are waiting to be created (ContainerCreating) or waiting for init
// containers (PodInitializing).
const (
	ReasonContainerCreating          = "ContainerCreating"
	ReasonPodInitializing            = "PodInitializing"
	ReasonCrashLoopBackOff           = "CrashLoopBackOff"
	ReasonErrImagePull               = "ErrImagePull"
	ReasonImagePullBackOff           = "ImagePullBackOff"
	ReasonErrImageNeverPull          = "ErrImageNeverPull"
	ReasonInvalidImageName           = "InvalidImageName"
	ReasonImageInspectError          = "ImageInspectError"
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonCreateContainerError       = "CreateContainerError"
	ReasonRunContainerError          = "RunContainerError"
	ReasonPostStartHookError         = "PostStartHookError"
	ReasonKillContainerError         = "KillContainerError"
	ReasonCreatePodSandboxError      = "CreatePodSandboxError"
	ReasonConfigPodSandboxError      = "ConfigPodSandboxError"
	ReasonKillPodSandboxError        = "KillPodSandboxError"
	ReasonResizePodInPlaceError      = "ResizePodInPlaceError"
	// ReasonFailedMount is the kubelet's event reason for a volume it
	// cannot set up.
	ReasonFailedMount = events.FailedMountVolume
)

// Sentinel errors, one per failure reason; a failed step's Err wraps one, so
// errors.Is(result.Err(), ErrCrashLoopBackOff) tells what happened. Their
// text is the reason, as upstream's.
var (
	ErrCrashLoopBackOff      = errors.New(ReasonCrashLoopBackOff)
	ErrImagePull             = errors.New(ReasonErrImagePull)
	ErrImagePullBackOff      = errors.New(ReasonImagePullBackOff)
	ErrImageNeverPull        = errors.New(ReasonErrImageNeverPull)
	ErrInvalidImageName      = errors.New(ReasonInvalidImageName)
	ErrImageInspect          = errors.New(ReasonImageInspectError)
	ErrCreateContainerConfig = errors.New(ReasonCreateContainerConfigError)
	ErrCreateContainer       = errors.New(ReasonCreateContainerError)
	ErrRunContainer          = errors.New(ReasonRunContainerError)
	ErrPostStartHook         = errors.New(ReasonPostStartHookError)
	ErrKillContainer         = errors.New(ReasonKillContainerError)
	ErrCreatePodSandbox      = errors.New(ReasonCreatePodSandboxError)
	ErrConfigPodSandbox      = errors.New(ReasonConfigPodSandboxError)
	ErrKillPodSandbox        = errors.New(ReasonKillPodSandboxError)
	ErrResizePodInPlace      = errors.New(ReasonResizePodInPlaceError)
	ErrFailedMount           = errors.New(ReasonFailedMount)
)

// SyncResult is what SyncPod did, step by step, successful steps included.
type SyncResult struct {
	Steps []StepResult
}

// StepResult is one step: an action on a target (a container's name, or the
// pod as "name_namespace(uid)" for sandbox steps).
type StepResult struct {
	Action string
	Target string
	// Err is nil when the step succeeded; otherwise it wraps the sentinel of
	// Reason.
	Err error
	// Reason is the upstream reason of a failure (CrashLoopBackOff, ...);
	// Message the details a user sees in the container's waiting state.
	Reason  string
	Message string
}

// Err joins the errors of the failed steps, nil when every step succeeded.
func (r *SyncResult) Err() error {
	var errs []error
	for _, s := range r.Steps {
		if s.Err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", s.Action, s.Target, s.Err))
		}
	}
	return errors.Join(errs...)
}

// OnlyBackOff reports whether some step failed and every failed step is a
// backoff (CrashLoopBackOff or ImagePullBackOff). Upstream's SyncPod does not
// count such a sync as failed: the pod is waiting, nothing is wrong with the
// node, and retrying sooner would only spam the log.
func (r *SyncResult) OnlyBackOff() bool {
	failed := false
	for _, s := range r.Steps {
		if s.Err == nil {
			continue
		}
		if !errors.Is(s.Err, ErrCrashLoopBackOff) && !errors.Is(s.Err, ErrImagePullBackOff) {
			return false
		}
		failed = true
	}
	return failed
}

// add records a finished step.
func (r *SyncResult) add(s StepResult) {
	r.Steps = append(r.Steps, s)
}

// failed reports whether any step failed.
func (r *SyncResult) failed() bool {
	for _, s := range r.Steps {
		if s.Err != nil {
			return true
		}
	}
	return false
}

// fail marks the step failed with reason (a sentinel) and the user-facing
// message.
func (s *StepResult) fail(reason error, message string) {
	s.Reason = reason.Error()
	s.Message = message
	if message == "" {
		s.Err = reason
		return
	}
	s.Err = fmt.Errorf("%w: %s", reason, message)
}

// reasonError is a failure with its upstream reason and the message for the
// user, as the steps of starting a container produce them.
type reasonError struct {
	reason  error
	message string
}

func (e *reasonError) Error() string { return fmt.Sprintf("%v: %s", e.reason, e.message) }
func (e *reasonError) Unwrap() error { return e.reason }

// failWith marks the step failed with err's reason and message when err is a
// reasonError, else with fallback as reason and err's text as message.
func (s *StepResult) failWith(err error, fallback error) {
	var re *reasonError
	if errors.As(err, &re) {
		s.fail(re.reason, re.message)
		return
	}
	s.fail(fallback, err.Error())
}

// newReasonError is a failure with an upstream reason.
func newReasonError(reason error, format string, args ...any) error {
	return &reasonError{reason: reason, message: fmt.Sprintf(format, args...)}
}

// causedError keeps a failure's text and makes its cause reachable to
// errors.Is and errors.As as well.
type causedError struct{ err, cause error }

func withCause(err, cause error) error { return &causedError{err: err, cause: cause} }
func (e *causedError) Error() string   { return e.err.Error() }
func (e *causedError) Unwrap() []error { return []error{e.err, e.cause} }
