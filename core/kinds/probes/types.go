package probes

import (
	"k8s.io/apimachinery/pkg/types"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// ProbeType is liveness, readiness or startup.
type ProbeType int

const (
	Liveness ProbeType = iota
	Readiness
	Startup
)

// probeTypes are every ProbeType, as indexes of per-probe arrays.
var probeTypes = [...]ProbeType{Liveness, Readiness, Startup}

// String is upstream's name of the type, the probe_type label of the
// prober metrics.
func (t ProbeType) String() string {
	switch t {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	}
	return "UNKNOWN"
}

// probeTypeOf is the ProbeType of a wire probe type.
func probeTypeOf(t probesv1.ProbeType) (ProbeType, bool) {
	switch t {
	case probesv1.ProbeType_PROBE_TYPE_LIVENESS:
		return Liveness, true
	case probesv1.ProbeType_PROBE_TYPE_READINESS:
		return Readiness, true
	case probesv1.ProbeType_PROBE_TYPE_STARTUP:
		return Startup, true
	}
	return 0, false
}

// Result is a probe's verdict, upstream's results.Result.
type Result int

const (
	Unknown Result = iota - 1
	Success
	Failure
)

// String is upstream's.
func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	}
	return "UNKNOWN"
}

// resultOf is the Result of a wire verdict; RESULT_UNSPECIFIED is none.
func resultOf(r probesv1.Result) (Result, bool) {
	switch r {
	case probesv1.Result_RESULT_SUCCESS:
		return Success, true
	case probesv1.Result_RESULT_FAILURE:
		return Failure, true
	case probesv1.Result_RESULT_UNKNOWN:
		return Unknown, true
	}
	return 0, false
}

// initialResult is a probe's verdict before the plugin reports one, as
// upstream's worker sets it for a new container: not ready, not to be
// restarted, not started.
func initialResult(t ProbeType) Result {
	switch t {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	}
	return Unknown
}

// Update says the plugin changed the verdict of a container's probe: a
// liveness or startup failure means the pod must be synced (the container
// restarted), a readiness or startup change that its status changed.
type Update struct {
	PodUID      types.UID
	ContainerID string
	Type        ProbeType
	Result      Result
}
