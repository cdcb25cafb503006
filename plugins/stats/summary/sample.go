// Package summary assembles the kubelet Summary API (microlet.types.v1,
// which mirrors k8s.io/kubelet/pkg/apis/stats/v1alpha1) from one
// collection of raw measurements: cgroup counters, statfs results, disk
// usage walks and the runtime's CRI stats. It does no I/O; the only state
// it keeps is the previous cpu counter of each cgroup, to turn cumulative
// cpu time into a rate (CPURates).
//
// The rules are the kubelet's CRI stats provider's (pkg/kubelet/stats:
// cri_stats_provider.go, helper.go, host_stats_provider.go) and its summary
// provider's (pkg/kubelet/server/stats/summary.go), with cadvisor's
// definitions where the kubelet leaves them to cadvisor (the working set).
package summary

import (
	"time"

	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// Sample is everything one summary is made of.
type Sample struct {
	// Time is when the collection started; it stamps values that have no
	// time of their own.
	Time time.Time
	// OnlyCPUAndMemory is /stats/summary?only_cpu_and_memory=true: the
	// collection skipped filesystems, network, rlimit and processes.
	OnlyCPUAndMemory bool
	Node             NodeSample
	// Pods are the pods that have at least one running container, in the
	// order the core listed them.
	Pods []PodSample
}

// CgroupSample is one reading of a cgroup's accounting, as cadvisor takes
// it for a container.
type CgroupSample struct {
	Time time.Time
	// CPUUsageNanos is the cumulative cpu time of every task in the cgroup;
	// nil when the cgroup has no cpu accounting.
	CPUUsageNanos *uint64
	// Memory is nil when the cgroup has no memory accounting.
	Memory *MemorySample
	// SwapUsage is nil when the kernel does not account swap for the cgroup.
	SwapUsage *uint64
	// SwapLimit is nil when swap is not limited.
	SwapLimit *uint64
	// Pressure stall information; nil where the kernel offers none (cgroup v1).
	CPUPressure, MemoryPressure, IOPressure *typesv1.PSIStats
	// CFS is the cgroup's CFS bandwidth accounting; nil when the cgroup has
	// no CFS quota.
	CFS *CFSSample
	// DiskIO is the cgroup's block I/O per device (cAdvisor's); empty when
	// the kernel counted none.
	DiskIO []*typesv1.DeviceIOStats
}

// CgroupCounters are a cgroup's counters that cAdvisor exports and a
// runtime's container stats lack.
type CgroupCounters struct {
	Time time.Time
	// Cache is the page cache; nil without memory accounting.
	Cache *uint64
	// CFS and DiskIO are as in CgroupSample.
	CFS    *CFSSample
	DiskIO []*typesv1.DeviceIOStats
}

// CFSSample is cpu.stat's nr_periods and nr_throttled.
type CFSSample struct {
	Periods, ThrottledPeriods uint64
}

// MemorySample is a cgroup's memory accounting.
type MemorySample struct {
	// Usage is memory.usage_in_bytes (v1) or memory.current (v2).
	Usage uint64
	// InactiveFile is total_inactive_file (v1) or inactive_file (v2): page
	// cache the kernel reclaims first, which the working set leaves out.
	InactiveFile uint64
	// RSS is total_rss (v1) or anon (v2).
	RSS uint64
	// Cache is total_cache (v1) or file (v2): the page cache.
	Cache uint64
	// PageFaults and MajorPageFaults are pgfault and pgmajfault.
	PageFaults, MajorPageFaults uint64
	// Limit is nil when the cgroup's memory is not limited.
	Limit *uint64
}

// FsSample is a filesystem as statfs(2) reports it (nodefacts.FsUsageOf).
type FsSample struct {
	Time       time.Time
	Capacity   uint64 // f_blocks * f_frsize
	Available  uint64 // f_bavail * f_frsize: what unprivileged writers may still use
	Used       uint64 // (f_blocks - f_bfree) * f_frsize
	Inodes     uint64 // f_files
	InodesFree uint64 // f_ffree
}

// DiskUsage is what a walk of files found, as du counts it: allocated
// blocks and inodes, hard links once.
type DiskUsage struct {
	Time   time.Time
	Bytes  uint64
	Inodes uint64
}

// NodeSample is what the node as a whole measured.
type NodeSample struct {
	Name     string
	BootTime time.Time
	// Root is the root cgroup. Its memory limit is ignored: the node's
	// available memory is measured against MemoryCapacity.
	Root CgroupSample
	// MemoryCapacity is MemTotal.
	MemoryCapacity uint64
	// SwapTotal and SwapFree come from /proc/meminfo; nil when unknown.
	SwapTotal, SwapFree *uint64
	// Pods is the cgroup all pods live in (the "pods" system container); nil
	// when it does not exist.
	Pods *PodsCgroupSample
	// The rest is nil when OnlyCPUAndMemory, or when it could not be read.
	Fs          *FsSample
	ImageFs     *RuntimeFsSample
	ContainerFs *RuntimeFsSample
	Rlimit      *RlimitSample
	Network     *NetworkSample
	// FilesystemIO is the reads and writes completed on the devices of the
	// node's disk filesystems (cAdvisor's root container's filesystem
	// counters); empty when unknown.
	FilesystemIO []*typesv1.DeviceIOStats
}

// PodsCgroupSample is the cgroup that holds every pod.
type PodsCgroupSample struct {
	Cgroup CgroupSample
	// Created is when the cgroup was made.
	Created time.Time
}

// RuntimeFsSample is a filesystem the runtime reports (CRI ImageFsInfo),
// with statfs of its mount point.
type RuntimeFsSample struct {
	Usage *hostv1.FilesystemUsage
	// Fs is nil when the mount point could not be measured; the stats then
	// carry only what the runtime said (as the kubelet's best effort).
	Fs *FsSample
}

// RlimitSample is the kernel's task limit and count.
type RlimitSample struct {
	Time time.Time
	// MaxPID is min(kernel.pid_max, kernel.threads-max); nil when neither
	// could be read.
	MaxPID *int64
	// Tasks is the number of tasks (processes and threads) on the node.
	Tasks *int64
}

// NetworkSample is the interfaces of a network namespace.
type NetworkSample struct {
	Time time.Time
	// Default names the default interface: the node's default route's, a
	// pod's eth0; empty when none.
	Default    string
	Interfaces []*typesv1.InterfaceStats
}

// PodSample is what one pod measured.
type PodSample struct {
	Pod *typesv1.Pod
	// Cgroup is the pod cgroup; nil when it could not be read, and the pod's
	// cpu and memory are then the sum of its containers'.
	Cgroup *CgroupSample
	// Containers are the pod's running containers.
	Containers []ContainerSample
	// Network is the interfaces of the pod's network namespace; nil when
	// OnlyCPUAndMemory or it could not be read.
	Network *NetworkSample
	// Volumes are the pod's measured volumes.
	Volumes []VolumeSample
	// Logs are the files directly in the pod's log directory (not the
	// containers'); nil when unknown.
	Logs *DiskUsage
	// EtcHosts is the pod's etc-hosts file; nil when the pod has none.
	EtcHosts *DiskUsage
}

// ContainerSample is what one running container measured.
type ContainerSample struct {
	Name      string
	StartTime time.Time
	// Runtime is the container's CRI stats.
	Runtime *hostv1.RuntimeContainerStats
	// Logs are the container's log files; nil when unknown.
	Logs *DiskUsage
	// Processes counts the processes in the container's cgroup; nil when
	// unknown.
	Processes *uint64
	// Counters are the container's own cgroup's counters that the
	// runtime's stats leave out; nil when unknown.
	Counters *CgroupCounters
}

// VolumeSample is one pod volume the node can measure.
type VolumeSample struct {
	Name string
	// Ephemeral volumes (disk-backed emptyDir) count toward the pod's
	// ephemeral storage, as the kubelet's IsLocalEphemeralVolume says.
	Ephemeral bool
	// Usage is nil until the first walk of the volume has finished.
	Usage *DiskUsage
	// Fs is the filesystem the volume lives on; nil when unknown.
	Fs *FsSample
}
