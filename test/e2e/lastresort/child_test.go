//go:build e2e

package lastresorte2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/internal/devcluster"
	"github.com/microlet/microlet/internal/prereq"
	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// report is what the child started, for the parent to find gone.
type report struct {
	// Processes are the child's descendants and the node's shims with
	// theirs (a shim is reparented away from containerd).
	Processes []process
	// Mounts are the mount points below the node's directories.
	Mounts []string
	// Netns are the pod sandboxes' network namespace files.
	Netns []string
	// Cgroups are the node's cgroup root in every hierarchy.
	Cgroups []string
	// Dirs are the node's, the devnode's and the cluster's directories;
	// RunDir and Bridge belong to the devnode's slot, which another
	// devnode on this machine may claim once the child released it.
	Dirs               []string
	DevnodeDir, RunDir string
	Bridge, ClusterDir string
}

// process names one process for good: a pid and its start time.
type process struct {
	PID   int
	Start uint64
	Comm  string
}

// runChild is the child's side: start everything, list it, block.
func runChild(t *testing.T, reportPath string) {
	begin := time.Now()
	var cluster *devcluster.Cluster
	var clusterErr error
	clusterUp := make(chan struct{})
	// The control plane comes up beside the node, to fit the timeout.
	go func() {
		defer close(clusterUp)
		cluster, clusterErr = devcluster.Start(context.Background(), devcluster.Options{})
	}()
	t.Cleanup(func() {
		<-clusterUp
		if cluster != nil {
			cluster.Close()
		}
	})
	n := pressuree2e.Start(t, pressuree2e.Options{NodeName: "lastresort"})
	n.Push(pressuree2e.PodSpec{Name: "victim", Script: pressuree2e.WaitForTermination, MemoryVolume: true}.Manifest())
	n.WaitPod("victim", "running", pressuree2e.Running)
	<-clusterUp
	if errors.Is(clusterErr, devcluster.ErrPrerequisites) {
		prereq.Missing(t, "devcluster: %v", clusterErr)
	}
	if clusterErr != nil {
		t.Fatal(clusterErr)
	}

	rep := report{DevnodeDir: n.Dev.Dir, RunDir: n.Dev.RunDir, Bridge: n.Dev.Bridge, ClusterDir: cluster.Dir,
		Dirs: []string{n.Dir, n.Dev.Dir, n.Dev.RunDir, cluster.Dir}}
	rep.Processes = started(t, n.Dev.Socket)
	for _, want := range []struct {
		pid  int
		what string
	}{{n.CorePID(), "the core"}, {n.Dev.PID, "containerd"}} {
		if !slices.ContainsFunc(rep.Processes, func(p process) bool { return p.PID == want.pid }) {
			t.Fatalf("%s (pid %d) is not among the processes found: %v", want.what, want.pid, rep.Processes)
		}
	}
	for _, comm := range []string{"etcd", "kube-apiserver", "containerd-shim", "sleep"} {
		if !slices.ContainsFunc(rep.Processes, func(p process) bool { return strings.HasPrefix(p.Comm, comm) }) {
			t.Fatalf("no %s among the processes found: %v", comm, rep.Processes)
		}
	}
	mounts, err := procfs.GetMounts()
	if err != nil {
		t.Fatal(err)
	}
	tmpfsVolume := false
	for _, m := range mounts {
		if under(m.MountPoint, n.Dir, n.Dev.Dir, n.Dev.RunDir) {
			rep.Mounts = append(rep.Mounts, m.MountPoint)
			tmpfsVolume = tmpfsVolume || m.FSType == "tmpfs" && strings.Contains(m.MountPoint, "empty-dir")
		}
		if m.FSType == "cgroup" || m.FSType == "cgroup2" {
			dir := filepath.Join(m.MountPoint, n.CgroupRoot)
			if _, err := os.Stat(dir); err == nil {
				rep.Cgroups = append(rep.Cgroups, dir)
			}
		}
	}
	if !tmpfsVolume {
		t.Fatalf("the pod's memory-backed emptyDir is not among the mounts: %v", rep.Mounts)
	}
	if len(rep.Cgroups) == 0 {
		t.Fatalf("the cgroup root %s is in no hierarchy", n.CgroupRoot)
	}
	rep.Netns = netnsPaths(t, n.CRI)
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(reportPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("up and listed after %v: %d processes, %d mounts, %d network namespaces, %d cgroups; blocking past the timeout",
		time.Since(begin).Round(time.Second), len(rep.Processes), len(rep.Mounts), len(rep.Netns), len(rep.Cgroups))
	time.Sleep(time.Hour)
}

// started lists this process's descendants and the shims serving socket
// with theirs.
func started(t *testing.T, socket string) []process {
	procs, err := procfs.AllProcs()
	if err != nil {
		t.Fatal(err)
	}
	children := map[int][]int{}
	stats := map[int]procfs.ProcStat{}
	var roots []int
	for _, p := range procs {
		stat, err := p.Stat()
		if err != nil {
			continue // gone meanwhile
		}
		stats[p.PID] = stat
		children[stat.PPID] = append(children[stat.PPID], p.PID)
		if args, err := p.CmdLine(); err == nil && slices.Contains(args, socket) && strings.HasPrefix(stat.Comm, "containerd-shim") {
			roots = append(roots, p.PID)
		}
	}
	var out []process
	seen := map[int]bool{}
	var walk func(pid int)
	walk = func(pid int) {
		for _, c := range children[pid] {
			if !seen[c] {
				seen[c] = true
				out = append(out, process{PID: c, Start: stats[c].Starttime, Comm: stats[c].Comm})
				walk(c)
			}
		}
	}
	walk(os.Getpid())
	for _, shim := range roots {
		if !seen[shim] {
			seen[shim] = true
			out = append(out, process{PID: shim, Start: stats[shim].Starttime, Comm: stats[shim].Comm})
		}
		walk(shim)
	}
	return out
}

// runs says whether the process is still there, and not a zombie.
func (p process) runs() bool {
	proc, err := procfs.NewProc(p.PID)
	if err != nil {
		return false
	}
	s, err := proc.Stat()
	return err == nil && s.Starttime == p.Start && s.State != "Z"
}

// netnsPaths are the network namespace files of the node's sandboxes, from
// the runtime spec containerd reports with a verbose status.
func netnsPaths(t *testing.T, cri runtimeapi.RuntimeServiceClient) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cri.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, s := range list.GetItems() {
		status, err := cri.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: s.GetId(), Verbose: true})
		if err != nil {
			t.Fatal(err)
		}
		var info struct {
			RuntimeSpec struct {
				Linux struct {
					Namespaces []struct{ Type, Path string }
				}
			}
		}
		if err := json.Unmarshal([]byte(status.GetInfo()["info"]), &info); err != nil {
			t.Fatalf("sandbox %s's verbose info: %v", s.GetId(), err)
		}
		for _, ns := range info.RuntimeSpec.Linux.Namespaces {
			if ns.Type == "network" && ns.Path != "" {
				paths = append(paths, ns.Path)
			}
		}
	}
	if len(paths) == 0 {
		t.Fatalf("no sandbox of %d reports a network namespace file", len(list.GetItems()))
	}
	return paths
}

// checkGone fails t for everything of the report still there.
func (r report) checkGone(t *testing.T) {
	t.Helper()
	// What the watchdog did not stop itself got SIGKILL from the kernel as
	// its parent exited (plugins from their core, the daemons from the
	// child): gone within moments.
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range r.Processes {
		for p.runs() && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if p.runs() {
			t.Errorf("%s (pid %d) still runs", p.Comm, p.PID)
		}
	}
	// Another devnode may have claimed the slot since: its run directory,
	// mounts in it and bridge are not the child's.
	slotReused := false
	if data, err := os.ReadFile(filepath.Join(r.RunDir, "node.json")); err == nil {
		var rec struct{ Dir string }
		slotReused = json.Unmarshal(data, &rec) == nil && rec.Dir != r.DevnodeDir
	}
	mounts, err := procfs.GetMounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		if slices.Contains(r.Mounts, m.MountPoint) && !(slotReused && under(m.MountPoint, r.RunDir)) ||
			slices.Contains(r.Netns, m.MountPoint) {
			t.Errorf("still mounted: %s (%s)", m.MountPoint, m.FSType)
		}
	}
	paths := append(append(slices.Clone(r.Netns), r.Cgroups...), r.Dirs...)
	if !slotReused {
		paths = append(paths, filepath.Join("/sys/class/net", r.Bridge))
	}
	for _, p := range paths {
		if slotReused && p == r.RunDir {
			continue
		}
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	if len(r.Processes) == 0 || len(r.Mounts) == 0 {
		t.Errorf("the report lists %d processes and %d mounts: the check proves nothing", len(r.Processes), len(r.Mounts))
	}
}

// under says whether path is one of dirs or below one.
func under(path string, dirs ...string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}
