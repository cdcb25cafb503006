package provider

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/plugins/stats/collect"
	"github.com/microlet/microlet/plugins/stats/summary"
	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// coreHost is what the plugin asks the core (*sdk.Host implements it).
type coreHost interface {
	Node(ctx context.Context) (*typesv1.Node, error)
	Pods(ctx context.Context) ([]*typesv1.Pod, error)
	ContainerStats(ctx context.Context) ([]*hostv1.RuntimeContainerStats, error)
	ImageFsInfo(ctx context.Context) (*hostv1.ImageFsInfoResponse, error)
}

// The kubelet's names for the cgroup that holds every pod, by cgroup driver.
const (
	podsCgroupCgroupfs = "/kubepods"
	podsCgroupSystemd  = "/kubepods.slice"
	// etcHostsPath is the pod's etc-hosts file under the agent's root
	// directory, as the kubelet lays it out.
	etcHostsPath = "pods/%s/etc-hosts"
	// containerRunning is typesv1.Container.state of a running container.
	containerRunning = "running"
	// emptyDirVolume is typesv1.Volume.type of an emptyDir.
	emptyDirVolume = "emptyDir"
)

// sampler measures one summary's raw inputs.
type sampler struct {
	cfg       Config
	host      coreHost
	nodeName  string
	proc      *collect.Proc
	cgroups   *collect.Cgroups
	diskUsage *collect.DiskUsageCache
	bootTime  time.Time
	log       hclog.Logger
}

// hostView is what one summary asks the core.
type hostView struct {
	node       *typesv1.Node
	pods       []*typesv1.Pod
	containers []*hostv1.RuntimeContainerStats
	imageFs    *hostv1.ImageFsInfoResponse
}

// sample measures everything a summary of kind k needs: filesystems,
// network, rlimit and processes unless it is cpu and memory alone; the
// cgroups' cAdvisor counters only for /metrics/cadvisor.
func (s *sampler) sample(ctx context.Context, k kind) (summary.Sample, error) {
	onlyCPUAndMemory := k == cpuAndMemory
	out := summary.Sample{Time: time.Now(), OnlyCPUAndMemory: onlyCPUAndMemory}
	view, err := s.ask(ctx, onlyCPUAndMemory)
	if err != nil {
		return out, err
	}
	counters := k == cadvisor
	if out.Node, err = s.nodeSample(view, onlyCPUAndMemory, counters); err != nil {
		return out, err
	}
	byID := make(map[string]*hostv1.RuntimeContainerStats, len(view.containers))
	for _, c := range view.containers {
		byID[c.GetContainerId()] = c
	}
	for _, pod := range view.pods {
		if p, ok := s.podSample(out, view.node, pod, byID, counters); ok {
			out.Pods = append(out.Pods, p)
		}
	}
	return out, nil
}

// ask makes the summary's calls to the core at once. It does not ask for
// the runtime's pod sandbox stats: containerd gathers those per sandbox
// from every shim and network namespace, at several times the cost of the
// container stats (docs/stats.md), and what the summary would take from
// them, the pod's network, is read from the sandbox's namespace instead.
func (s *sampler) ask(ctx context.Context, onlyCPUAndMemory bool) (hostView, error) {
	var v hostView
	var wg sync.WaitGroup
	errs := make([]error, 4)
	wg.Go(func() { v.node, errs[0] = s.host.Node(ctx) })
	wg.Go(func() { v.pods, errs[1] = s.host.Pods(ctx) })
	wg.Go(func() { v.containers, errs[2] = s.host.ContainerStats(ctx) })
	if !onlyCPUAndMemory {
		wg.Go(func() { v.imageFs, errs[3] = s.host.ImageFsInfo(ctx) })
	}
	wg.Wait()
	for i, what := range []string{"get the node", "list pods", "list container stats", "get image filesystem info"} {
		if errs[i] != nil {
			errs[i] = fmt.Errorf("%s from the core's host service: %w", what, errs[i])
		}
	}
	return v, errors.Join(errs...)
}

// nodeSample measures the node. Memory, the root cgroup and, for a full
// summary, the agent's root filesystem and the image filesystem are
// required, as the kubelet's summary fails without them; the rest is
// best effort. counters adds the cAdvisor counters.
func (s *sampler) nodeSample(v hostView, onlyCPUAndMemory, counters bool) (summary.NodeSample, error) {
	out := summary.NodeSample{Name: v.node.GetName(), BootTime: s.bootTime}
	if out.Name == "" {
		out.Name = s.nodeName
	}
	meminfo, err := s.proc.Meminfo()
	if err != nil {
		return out, fmt.Errorf("read meminfo: %w", err)
	}
	if meminfo.MemTotalBytes == nil {
		return out, errors.New("meminfo has no MemTotal")
	}
	out.MemoryCapacity = *meminfo.MemTotalBytes
	out.SwapTotal, out.SwapFree = meminfo.SwapTotalBytes, meminfo.SwapFreeBytes
	if out.Root, err = s.cgroups.ReadRoot(meminfo, counters); err != nil {
		return out, fmt.Errorf("read the root cgroup: %w", err)
	}
	if out.Root.CPUUsageNanos == nil {
		usage, err := s.proc.CPUUsageNanos()
		if err != nil {
			return out, fmt.Errorf("the root cgroup has no cpu accounting, and /proc/stat: %w", err)
		}
		out.Root.CPUUsageNanos = &usage
	}
	s.nodePressure(&out.Root)
	out.Pods = s.podsCgroup(v.node, counters)
	if onlyCPUAndMemory {
		return out, nil
	}
	rootDir := v.node.GetRootDir()
	if rootDir == "" {
		return out, errors.New("the core's node view names no root_dir, the filesystem to measure as nodefs")
	}
	if out.Fs, err = collect.Statfs(rootDir); err != nil {
		return out, fmt.Errorf("measure the node's filesystem: %w", err)
	}
	if out.ImageFs, out.ContainerFs, err = s.runtimeFilesystems(v.imageFs); err != nil {
		return out, err
	}
	out.Rlimit = s.proc.Rlimit()
	if out.Network, err = s.proc.Network(); err != nil {
		s.log.Debug("cannot read the node's network interfaces", "error", err)
	}
	if !counters {
		return out, nil
	}
	if out.FilesystemIO, err = s.proc.FilesystemIO(); err != nil {
		s.log.Debug("cannot read the node's filesystems' I/O", "error", err)
	}
	return out, nil
}

// nodePressure takes the node's pressure stall information from
// /proc/pressure, where the kernel offers it.
func (s *sampler) nodePressure(root *summary.CgroupSample) {
	for _, p := range []struct {
		resource string
		dst      **typesv1.PSIStats
	}{{"cpu", &root.CPUPressure}, {"memory", &root.MemoryPressure}, {"io", &root.IOPressure}} {
		psi, err := s.proc.Pressure(p.resource)
		if err != nil {
			s.log.Debug("cannot read pressure stall information", "resource", p.resource, "error", err)
			continue
		}
		if psi != nil {
			*p.dst = psi
		}
	}
}

// podsCgroup measures the cgroup every pod lives in, its cAdvisor counters
// too with counters; nil when it does not exist or cannot be read (the
// kubelet skips a system container then).
func (s *sampler) podsCgroup(node *typesv1.Node, counters bool) *summary.PodsCgroupSample {
	path := s.cfg.PodsCgroup
	if path == "" {
		path = node.GetPodsCgroup()
	}
	if path == "" {
		path = podsCgroupCgroupfs
		if node.GetCgroupDriver() == "systemd" {
			path = podsCgroupSystemd
		}
	}
	cg, err := s.cgroups.Read(path, counters)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("cannot read the pods cgroup", "cgroup", path, "error", err)
		}
		return nil
	}
	created, err := s.cgroups.Created(path)
	if err != nil {
		s.log.Debug("cannot tell when the pods cgroup was made", "cgroup", path, "error", err)
	}
	return &summary.PodsCgroupSample{Cgroup: cg, Created: created}
}

// runtimeFilesystems are the runtime's first image and container
// filesystems, each with statfs of its mount point. As the kubelet's, a
// summary fails when the runtime reports no image filesystem.
func (s *sampler) runtimeFilesystems(info *hostv1.ImageFsInfoResponse) (image, container *summary.RuntimeFsSample, err error) {
	if len(info.GetImageFilesystems()) == 0 {
		return nil, nil, errors.New("imageFs information is unavailable: the runtime reports no image filesystem")
	}
	image = s.runtimeFilesystem(info.GetImageFilesystems()[0])
	if cfs := info.GetContainerFilesystems(); len(cfs) > 0 {
		container = s.runtimeFilesystem(cfs[0])
	}
	return image, container, nil
}

func (s *sampler) runtimeFilesystem(usage *hostv1.FilesystemUsage) *summary.RuntimeFsSample {
	out := &summary.RuntimeFsSample{Usage: usage}
	if mp := usage.GetMountpoint(); mp != "" {
		st, err := collect.Statfs(mp)
		if err != nil {
			// As the kubelet's best effort: the runtime's usage alone.
			s.log.Debug("cannot measure the runtime's filesystem", "mountpoint", mp, "error", err)
		}
		out.Fs = st
	}
	return out
}

// podSample measures one pod; false when it has no running container the
// runtime reports stats of, as the kubelet lists only those.
func (s *sampler) podSample(sample summary.Sample, node *typesv1.Node, pod *typesv1.Pod, stats map[string]*hostv1.RuntimeContainerStats, counters bool) (summary.PodSample, bool) {
	out := summary.PodSample{Pod: pod}
	cgroup := collect.CgroupPath(pod.GetCgroupParent())
	for _, c := range append(append([]*typesv1.Container{}, pod.GetInitContainers()...), pod.GetContainers()...) {
		rt := stats[c.GetContainerId()]
		if c.GetState() != containerRunning || c.GetContainerId() == "" || rt == nil {
			continue
		}
		cs := summary.ContainerSample{Name: c.GetName(), Runtime: rt}
		if c.StartedAt != nil {
			cs.StartTime = c.StartedAt.AsTime()
		}
		if !sample.OnlyCPUAndMemory {
			cs.Logs = s.logs(pod, filepath.Join(pod.GetLogDirectory(), c.GetName()))
			cs.Processes, cs.Counters = s.containerCgroup(cgroup, c.GetContainerId(), counters)
		}
		out.Containers = append(out.Containers, cs)
	}
	if len(out.Containers) == 0 {
		return out, false
	}
	if cgroup != "" {
		cg, err := s.cgroups.Read(cgroup, counters)
		if err != nil {
			s.log.Debug("cannot read the pod cgroup; the pod's cpu and memory are its containers' sum", "pod", podName(pod), "cgroup", cgroup, "error", err)
		} else {
			out.Cgroup = &cg
		}
	}
	if sample.OnlyCPUAndMemory {
		return out, true
	}
	out.Network = s.podNetwork(pod, cgroup)
	out.Logs = s.logs(pod, pod.GetLogDirectory())
	if root := node.GetRootDir(); root != "" {
		etcHosts, err := collect.FileUsage(filepath.Join(root, fmt.Sprintf(etcHostsPath, pod.GetUid())))
		if err != nil {
			s.log.Debug("cannot measure the pod's etc-hosts", "pod", podName(pod), "error", err)
		}
		out.EtcHosts = etcHosts
	}
	for _, v := range pod.GetVolumes() {
		if v.GetType() == emptyDirVolume && v.GetHostPath() != "" {
			out.Volumes = append(out.Volumes, s.emptyDir(pod, v))
		}
	}
	return out, true
}

// podNetwork reads the pod's network namespace through its sandbox's
// process; nil when the sandbox's cgroup or process cannot be found.
func (s *sampler) podNetwork(pod *typesv1.Pod, podCgroup string) *summary.NetworkSample {
	if podCgroup == "" || pod.GetSandboxId() == "" {
		return nil
	}
	path := s.cgroups.ContainerPath(podCgroup, pod.GetSandboxId())
	if path == "" {
		return nil
	}
	pid, err := s.cgroups.FirstProcess(path)
	if err == nil {
		var network *summary.NetworkSample
		if network, err = s.proc.ProcessNetwork(pid); err == nil {
			return network
		}
	}
	s.log.Debug("cannot read the pod's network", "pod", podName(pod), "cgroup", path, "error", err)
	return nil
}

// logs measures the log files directly in dir; nil when dir is unknown
// or cannot be read (a pod whose logs were never written).
func (s *sampler) logs(pod *typesv1.Pod, dir string) *summary.DiskUsage {
	if pod.GetLogDirectory() == "" {
		return nil
	}
	usage, err := collect.FilesUsage(dir)
	if err != nil {
		s.log.Debug("cannot measure log files", "pod", podName(pod), "dir", dir, "error", err)
		return nil
	}
	return usage
}

// containerCgroup counts a container's processes and, with counters,
// reads its cgroup's cAdvisor counters that the runtime's stats leave out;
// nil when the cgroup cannot be found or read.
func (s *sampler) containerCgroup(podCgroup, containerID string, counters bool) (*uint64, *summary.CgroupCounters) {
	if podCgroup == "" {
		return nil, nil
	}
	path := s.cgroups.ContainerPath(podCgroup, containerID)
	if path == "" {
		return nil, nil
	}
	var processes *uint64
	if n, err := s.cgroups.Processes(path); err != nil {
		s.log.Debug("cannot count a container's processes", "cgroup", path, "error", err)
	} else {
		processes = &n
	}
	if !counters {
		return processes, nil
	}
	read, err := s.cgroups.Counters(path)
	if err != nil {
		s.log.Debug("cannot read a container's cgroup counters", "cgroup", path, "error", err)
		return processes, nil
	}
	return processes, &read
}

// emptyDir measures an emptyDir volume. One on disk is walked in the
// background (DiskUsageCache) and counts toward ephemeral storage; one in
// memory (or huge pages) is a filesystem of its own, measured by statfs.
func (s *sampler) emptyDir(pod *typesv1.Pod, v *typesv1.Volume) summary.VolumeSample {
	out := summary.VolumeSample{Name: v.GetName(), Ephemeral: v.GetMedium() == ""}
	st, err := collect.Statfs(v.GetHostPath())
	if err != nil {
		s.log.Debug("cannot measure a volume's filesystem", "pod", podName(pod), "volume", v.GetName(), "error", err)
		return out
	}
	out.Fs = st
	if out.Ephemeral {
		out.Usage = s.diskUsage.Get(v.GetHostPath())
	} else {
		out.Usage = &summary.DiskUsage{Time: st.Time, Bytes: st.Used, Inodes: st.Inodes - st.InodesFree}
	}
	return out
}

func podName(p *typesv1.Pod) string {
	return strings.Join([]string{p.GetNamespace(), p.GetName()}, "/")
}
