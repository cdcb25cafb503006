package eviction

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/utils/clock"

	"github.com/microlet/microlet/core/kinds/stats"
	"github.com/microlet/microlet/core/node/machine"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk/nodefacts"
)

// Measurer measures what the eviction signals need while the stats plugin
// does not serve, with the stats plugin's definitions (docs/stats.md): the
// node's memory (the root memory cgroup on v1; /proc/meminfo on v2), the
// node filesystem (statfs of root_dir), the image filesystem (statfs of its
// mount point) and each pod's memory (its cgroup). Working set is usage less
// inactive file pages. It leaves out what only the stats plugin measures
// (pods' disk usage, process counts), so disk pressure ranks pods by
// priority alone.
type Measurer struct {
	Cgroups *machine.Cgroups
	// RootDir is the agent's root_dir, on the node filesystem.
	RootDir string
	// ImageFsMount is the mount point of the runtime's image filesystem
	// (CRI ImageFsInfo); nil: unknown.
	ImageFsMount func(ctx context.Context) (string, error)
	// ProcFS is where procfs is mounted; "" is /proc.
	ProcFS string
	// Clock stamps the measurements; nil is the real clock.
	Clock clock.PassiveClock
}

// Sample measures the node and the pods' memory. The node's memory and
// filesystem must be readable; the image filesystem and pods are best
// effort: what cannot be read is left out.
func (m *Measurer) Sample(ctx context.Context, pods []*typesv1.Pod) (*stats.Sample, error) {
	now := timestamppb.New(m.now())
	memory, err := m.nodeMemory(now)
	if err != nil {
		return nil, fmt.Errorf("measuring the node's memory: %w", err)
	}
	fs, err := statfs(m.RootDir, now)
	if err != nil {
		return nil, fmt.Errorf("measuring the node filesystem: %w", err)
	}
	node := &typesv1.NodeStats{Memory: memory, Fs: fs}
	if mount, err := m.imageFsMount(ctx); err == nil {
		if imageFs, err := statfs(mount, now); err == nil {
			node.Runtime = &typesv1.RuntimeStats{ImageFs: imageFs}
		}
	}
	out := &stats.Sample{Node: node}
	m.addPods(out, pods, now)
	return out, nil
}

// AddMissingPods measures the memory of the pods a sample has no stats for.
func (m *Measurer) AddMissingPods(sample *stats.Sample, pods []*typesv1.Pod) {
	listed := make(map[string]bool, len(sample.Pods))
	for _, ps := range sample.Pods {
		listed[ps.GetPodRef().GetUid()] = true
	}
	var missing []*typesv1.Pod
	for _, pod := range pods {
		if !listed[pod.GetUid()] {
			missing = append(missing, pod)
		}
	}
	m.addPods(sample, missing, timestamppb.New(m.now()))
}

// addPods adds the memory of each pod with a cgroup of its own.
func (m *Measurer) addPods(sample *stats.Sample, pods []*typesv1.Pod, now *timestamppb.Timestamp) {
	for _, pod := range pods {
		if pod.GetCgroupParent() == "" {
			continue
		}
		mem, err := m.cgroupMemory(pod.GetCgroupParent(), now)
		if err != nil {
			continue // gone meanwhile, or not made yet
		}
		sample.Pods = append(sample.Pods, &typesv1.PodStats{
			PodRef: &typesv1.PodReference{Name: pod.GetName(), Namespace: pod.GetNamespace(), Uid: pod.GetUid()},
			Memory: mem,
		})
	}
}

// DedicatedImageFs reports whether images are on a filesystem other than
// root_dir's (upstream compares the devices cAdvisor reports).
func (m *Measurer) DedicatedImageFs(ctx context.Context) (bool, error) {
	mount, err := m.imageFsMount(ctx)
	if err != nil {
		return false, err
	}
	var root, images unix.Stat_t
	if err := unix.Stat(m.RootDir, &root); err != nil {
		return false, fmt.Errorf("stat %s: %w", m.RootDir, err)
	}
	if err := unix.Stat(mount, &images); err != nil {
		return false, fmt.Errorf("stat %s: %w", mount, err)
	}
	return root.Dev != images.Dev, nil
}

func (m *Measurer) imageFsMount(ctx context.Context) (string, error) {
	if m.ImageFsMount == nil {
		return "", errors.New("the image filesystem is unknown")
	}
	mount, err := m.ImageFsMount(ctx)
	if err == nil && mount == "" {
		err = errors.New("the runtime reports no image filesystem mount point")
	}
	return mount, err
}

func (m *Measurer) now() time.Time {
	if m.Clock == nil {
		return time.Now()
	}
	return m.Clock.Now()
}

// nodeMemory is the node's memory: on v1 the root memory cgroup (what
// cAdvisor reads), on v2 /proc/meminfo (the v2 root has no usage file).
// Available is MemTotal less the working set.
func (m *Measurer) nodeMemory(now *timestamppb.Timestamp) (*typesv1.MemoryStats, error) {
	fs, err := procfs.NewFS(m.procFS())
	if err != nil {
		return nil, err
	}
	info, err := fs.Meminfo()
	if err != nil {
		return nil, err
	}
	if info.MemTotalBytes == nil || info.MemFreeBytes == nil || info.InactiveFileBytes == nil {
		return nil, errors.New("meminfo lacks MemTotal, MemFree or Inactive(file)")
	}
	total := *info.MemTotalBytes
	var mem *typesv1.MemoryStats
	if m.Cgroups.Version() == 1 {
		if mem, err = m.cgroupMemory("/", now); err != nil {
			return nil, err
		}
	} else {
		mem = memoryStats(total-*info.MemFreeBytes, *info.InactiveFileBytes, now)
	}
	available := total - min(total, mem.GetWorkingSetBytes())
	mem.AvailableBytes = &available
	return mem, nil
}

// cgroupMemory reads a cgroup's memory usage and inactive file pages.
func (m *Measurer) cgroupMemory(cgroup string, now *timestamppb.Timestamp) (*typesv1.MemoryStats, error) {
	dir, usageFile, inactiveKey := filepath.Join(m.Cgroups.V1["memory"], cgroup), "memory.usage_in_bytes", "total_inactive_file"
	if m.Cgroups.Version() == 2 {
		dir, usageFile, inactiveKey = filepath.Join(m.Cgroups.Unified, cgroup), "memory.current", "inactive_file"
	}
	raw, err := os.ReadFile(filepath.Join(dir, usageFile))
	if err != nil {
		return nil, err
	}
	usage, err := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", dir, usageFile, err)
	}
	inactive, err := statValue(filepath.Join(dir, "memory.stat"), inactiveKey)
	if err != nil {
		return nil, err
	}
	return memoryStats(usage, inactive, now), nil
}

// memoryStats is usage with the working set cAdvisor computes from it.
func memoryStats(usage, inactiveFile uint64, now *timestamppb.Timestamp) *typesv1.MemoryStats {
	workingSet := nodefacts.WorkingSet(usage, inactiveFile)
	return &typesv1.MemoryStats{Time: now, UsageBytes: &usage, WorkingSetBytes: &workingSet}
}

// statValue reads one key of a memory.stat file.
func statValue(file, key string) (uint64, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	s := bufio.NewScanner(bytes.NewReader(raw))
	for s.Scan() {
		name, value, ok := strings.Cut(s.Text(), " ")
		if ok && name == key {
			v, err := strconv.ParseUint(value, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %s: %w", file, key, err)
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("%s has no %s", file, key)
}

// statfs measures a filesystem as the stats plugin does (nodefacts.Statfs):
// what an unprivileged user may still use is available.
func statfs(path string, now *timestamppb.Timestamp) (*typesv1.FsStats, error) {
	u, err := nodefacts.Statfs(path)
	if err != nil {
		return nil, err
	}
	return &typesv1.FsStats{Time: now, CapacityBytes: &u.Capacity, AvailableBytes: &u.Available, UsedBytes: &u.Used,
		Inodes: &u.Inodes, InodesFree: &u.InodesFree, InodesUsed: &u.InodesUsed}, nil
}

func (m *Measurer) procFS() string {
	if m.ProcFS == "" {
		return procfs.DefaultMountPoint
	}
	return m.ProcFS
}
