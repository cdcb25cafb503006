package evictionengine

import "strings"

// Signal is an eviction signal, named as the kubelet names it.
type Signal string

// The signals the engine observes (pkg/kubelet/eviction/api/types.go). The
// containerfs signals are left out: upstream derives them from nodefs or
// imagefs and ignores what the operator writes for them.
const (
	SignalMemoryAvailable            Signal = "memory.available"
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	SignalNodeFsAvailable            Signal = "nodefs.available"
	SignalNodeFsInodesFree           Signal = "nodefs.inodesFree"
	SignalImageFsAvailable           Signal = "imagefs.available"
	SignalImageFsInodesFree          Signal = "imagefs.inodesFree"
	SignalPIDAvailable               Signal = "pid.available"
)

// Resource is what a signal measures, named as the kubelet names it in
// eviction messages ("The node was low on resource: memory.").
type Resource string

// The resources behind the signals.
const (
	ResourceMemory           Resource = "memory"
	ResourceEphemeralStorage Resource = "ephemeral-storage"
	ResourceInodes           Resource = "inodes"
	ResourcePIDs             Resource = "pids"
)

// The node conditions the signals drive.
const (
	ConditionMemoryPressure = "MemoryPressure"
	ConditionDiskPressure   = "DiskPressure"
	ConditionPIDPressure    = "PIDPressure"
)

// pressureConditions is the fixed order conditions are reported and printed in.
var pressureConditions = []string{ConditionMemoryPressure, ConditionDiskPressure, ConditionPIDPressure}

// fsScope says which of a pod's filesystem usages count against a disk signal.
type fsScope uint8

const (
	fsRootfs fsScope = 1 << iota
	fsLogs
	fsLocalVolumes
)

// signalInfo is what the engine knows about one signal.
type signalInfo struct {
	resource  Resource
	condition string
	// imageFs is set for the imagefs signals: their node-level reclaim and
	// pod usage depend on whether images have a filesystem of their own.
	imageFs bool
}

var signals = map[Signal]signalInfo{
	SignalMemoryAvailable:            {resource: ResourceMemory, condition: ConditionMemoryPressure},
	SignalAllocatableMemoryAvailable: {resource: ResourceMemory, condition: ConditionMemoryPressure},
	SignalNodeFsAvailable:            {resource: ResourceEphemeralStorage, condition: ConditionDiskPressure},
	SignalNodeFsInodesFree:           {resource: ResourceInodes, condition: ConditionDiskPressure},
	SignalImageFsAvailable:           {resource: ResourceEphemeralStorage, condition: ConditionDiskPressure, imageFs: true},
	SignalImageFsInodesFree:          {resource: ResourceInodes, condition: ConditionDiskPressure, imageFs: true},
	SignalPIDAvailable:               {resource: ResourcePIDs, condition: ConditionPIDPressure},
}

// supportedSignals lists the signals in the order error messages name them.
var supportedSignals = []Signal{
	SignalMemoryAvailable, SignalAllocatableMemoryAvailable,
	SignalNodeFsAvailable, SignalNodeFsInodesFree,
	SignalImageFsAvailable, SignalImageFsInodesFree,
	SignalPIDAvailable,
}

func supportedSignalList() string {
	names := make([]string, len(supportedSignals))
	for i, s := range supportedSignals {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// Resource is what the signal measures.
func (s Signal) Resource() Resource { return signals[s].resource }

// isMemory reports the signals upstream handles before all others.
func (s Signal) isMemory() bool { return signals[s].resource == ResourceMemory }

// countsBytes reports whether the signal's quantities are bytes, which the
// kubelet prints in binary units ("80Mi") rather than decimal ones ("5k").
func (s Signal) countsBytes() bool {
	r := signals[s].resource
	return r == ResourceMemory || r == ResourceEphemeralStorage
}

// fsScope is which pod filesystem usage counts against a disk signal
// (upstream buildSignalToRankFunc): with a dedicated imagefs, nodefs holds
// logs and local volumes and imagefs holds the containers' writable layers;
// without one, both signals see all three.
func (s Signal) fsScope(dedicatedImageFs bool) fsScope {
	switch {
	case !dedicatedImageFs:
		return fsRootfs | fsLogs | fsLocalVolumes
	case signals[s].imageFs:
		return fsRootfs
	default:
		return fsLogs | fsLocalVolumes
	}
}
