// Package machine reads what the node has: its capacity (CPUs, memory,
// ephemeral storage, huge pages, process IDs, pods) as the kubelet reports
// it, and how its cgroups are mounted.
package machine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
	"github.com/prometheus/procfs/sysfs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk/nodefacts"
)

// Options say where to read the capacity from.
type Options struct {
	// RootDir is the agent's root directory: ephemeral-storage is the size
	// of its filesystem, as the kubelet's root dir's.
	RootDir string
	// MaxPods is the pods capacity (max_pods).
	MaxPods int
	// ProcFS and SysFS are where procfs and sysfs are mounted; "" reads
	// /proc and /sys.
	ProcFS, SysFS string
}

// Capacity is what the node has, in canonical units.
type Capacity struct {
	// CPUMillis are the online CPUs, in millicores.
	CPUMillis int64
	// MemoryBytes is MemTotal.
	MemoryBytes int64
	// EphemeralStorageBytes is the size of the root dir's filesystem.
	EphemeralStorageBytes int64
	// HugePages are the bytes of each huge page pool by resource name
	// ("hugepages-2Mi"); pools of zero pages are listed too, as upstream.
	HugePages map[v1.ResourceName]int64
	// Pods is max_pods.
	Pods int64
	// PIDs is how many processes the kernel allows: the smaller of
	// kernel.pid_max and kernel.threads-max. It is the kubelet's internal
	// "pid" resource, which reservations and kubepods use and node status
	// does not show.
	PIDs int64
}

// ReadCapacity reads the node's capacity as the kubelet (through cAdvisor)
// does: online CPUs, MemTotal, the filesystem of the root dir, every huge
// page pool in /sys/kernel/mm/hugepages, and the kernel's process limits.
func ReadCapacity(opts Options) (*Capacity, error) {
	if opts.MaxPods <= 0 {
		return nil, fmt.Errorf("max_pods must be positive, got %d", opts.MaxPods)
	}
	procRoot, sysRoot := orDefault(opts.ProcFS, procfs.DefaultMountPoint), orDefault(opts.SysFS, sysfs.DefaultMountPoint)
	proc, err := procfs.NewFS(procRoot)
	if err != nil {
		return nil, err
	}
	sys, err := sysfs.NewFS(sysRoot)
	if err != nil {
		return nil, err
	}
	c := &Capacity{Pods: int64(opts.MaxPods)}
	cpus, err := onlineCPUs(sys)
	if err != nil {
		return nil, err
	}
	c.CPUMillis = cpus * 1000
	meminfo, err := proc.Meminfo()
	if err != nil {
		return nil, fmt.Errorf("read %s/meminfo: %w", procRoot, err)
	}
	if meminfo.MemTotalBytes == nil {
		return nil, fmt.Errorf("%s/meminfo has no MemTotal", procRoot)
	}
	c.MemoryBytes = int64(*meminfo.MemTotalBytes)
	if c.EphemeralStorageBytes, err = filesystemSize(opts.RootDir); err != nil {
		return nil, err
	}
	if c.HugePages, err = hugePagePools(filepath.Join(sysRoot, "kernel/mm/hugepages")); err != nil {
		return nil, err
	}
	if c.PIDs, err = taskLimit(proc); err != nil {
		return nil, err
	}
	return c, nil
}

// ResourceList is the capacity as plugins see it, the internal pid
// resource included.
func (c *Capacity) ResourceList() *typesv1.ResourceList {
	out := &typesv1.ResourceList{
		CpuMillis:             &c.CPUMillis,
		MemoryBytes:           &c.MemoryBytes,
		EphemeralStorageBytes: &c.EphemeralStorageBytes,
		Pids:                  &c.PIDs,
		Other:                 map[string]int64{string(v1.ResourcePods): c.Pods},
	}
	for name, bytes := range c.HugePages {
		out.Other[string(name)] = bytes
	}
	return out
}

// Resources is the capacity as node status shows it, in the kubelet's
// quantity formats; the internal pid resource is left out.
func (c *Capacity) Resources() v1.ResourceList {
	out := v1.ResourceList{
		v1.ResourceCPU:              *resource.NewMilliQuantity(c.CPUMillis, resource.DecimalSI),
		v1.ResourceMemory:           *resource.NewQuantity(c.MemoryBytes, resource.BinarySI),
		v1.ResourceEphemeralStorage: *resource.NewQuantity(c.EphemeralStorageBytes, resource.BinarySI),
		v1.ResourcePods:             *resource.NewQuantity(c.Pods, resource.DecimalSI),
	}
	for name, bytes := range c.HugePages {
		out[name] = *resource.NewQuantity(bytes, resource.BinarySI)
	}
	return out
}

// onlineCPUs counts the CPUs the kernel runs. A CPU without an online
// file (usually cpu0) cannot be taken offline, so it is online.
func onlineCPUs(sys sysfs.FS) (int64, error) {
	cpus, err := sys.CPUs()
	if err != nil {
		return 0, fmt.Errorf("list CPUs: %w", err)
	}
	var online int64
	for _, cpu := range cpus {
		up, err := cpu.Online()
		if errors.Is(err, os.ErrNotExist) {
			up, err = true, nil
		}
		if err != nil {
			return 0, fmt.Errorf("read %s/online: %w", string(cpu), err)
		}
		if up {
			online++
		}
	}
	if online == 0 {
		return 0, errors.New("no online CPU found in sysfs devices/system/cpu")
	}
	return online, nil
}

// filesystemSize is the size of the filesystem holding dir (cAdvisor's
// Frsize × Blocks, nodefacts.Statfs).
func filesystemSize(dir string) (int64, error) {
	u, err := nodefacts.Statfs(dir)
	if err != nil {
		return 0, fmt.Errorf("root dir: %w", err)
	}
	return int64(u.Capacity), nil
}

// hugePagePools reads hugepages-<size>kB/nr_hugepages under dir. A kernel
// without huge pages has no dir: no pools.
func hugePagePools(dir string) (map[v1.ResourceName]int64, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read huge page pools: %w", err)
	}
	pools := map[v1.ResourceName]int64{}
	for _, e := range entries {
		kb, ok := strings.CutPrefix(e.Name(), "hugepages-")
		kb, unit := strings.CutSuffix(kb, "kB")
		if !ok || !unit {
			continue
		}
		pageKiB, err := strconv.ParseInt(kb, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("huge page pool %s: %w", e.Name(), err)
		}
		pages, err := readInt(filepath.Join(dir, e.Name(), "nr_hugepages"))
		if err != nil {
			return nil, err
		}
		pageSize := resource.NewQuantity(pageKiB*1024, resource.BinarySI)
		pools[v1.ResourceName(v1.ResourceHugePagesPrefix+pageSize.String())] = pageKiB * 1024 * pages
	}
	return pools, nil
}

// taskLimit is the smaller of kernel.pid_max and kernel.threads-max
// (upstream pkg/kubelet/stats/pidlimit).
func taskLimit(proc procfs.FS) (int64, error) {
	var limit int64 = -1
	for _, sysctl := range []string{"kernel.pid_max", "kernel.threads-max"} {
		v, err := proc.SysctlInts(sysctl)
		if err != nil || len(v) != 1 {
			return 0, fmt.Errorf("read %s: %v", sysctl, err)
		}
		if limit < 0 || int64(v[0]) < limit {
			limit = int64(v[0])
		}
	}
	return limit, nil
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
