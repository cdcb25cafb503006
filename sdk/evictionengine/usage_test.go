package evictionengine

import (
	"slices"
	"testing"
	"time"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// recorder keeps what the engine hands a policy to rank.
type recorder struct {
	fifo
	resource   Resource
	candidates []Candidate
}

func (r *recorder) Rank(res Resource, _ time.Time, cs []Candidate) {
	r.resource, r.candidates = res, slices.Clone(cs)
}

func TestPodRequest(t *testing.T) {
	req := func(mem int64) *typesv1.Resources {
		return &typesv1.Resources{Requests: &typesv1.ResourceList{MemoryBytes: i64(mem), EphemeralStorageBytes: i64(mem * 2)}}
	}
	tests := []struct {
		name string
		pod  *typesv1.Pod
		want int64
	}{
		{"no requests", &typesv1.Pod{Containers: []*typesv1.Container{{Name: "a"}}}, 0},
		{"containers add up", &typesv1.Pod{Containers: []*typesv1.Container{{Resources: req(100)}, {Resources: req(50)}, {}}}, 150},
		{"an init container larger than the containers decides", &typesv1.Pod{
			InitContainers: []*typesv1.Container{{Resources: req(300)}},
			Containers:     []*typesv1.Container{{Resources: req(100)}},
		}, 300},
		{"sidecars run with the containers and beside later init containers", &typesv1.Pod{
			InitContainers: []*typesv1.Container{
				{Resources: req(40), Restartable: true},
				{Resources: req(100)}, // runs beside the sidecar: 140
				{Resources: req(10), Restartable: true},
			},
			Containers: []*typesv1.Container{{Resources: req(60)}}, // 60 + 40 + 10 = 110
		}, 140},
		{"pod-level memory request replaces the containers'", &typesv1.Pod{
			PodResources: &typesv1.Resources{Requests: &typesv1.ResourceList{MemoryBytes: i64(500)}},
			Containers:   []*typesv1.Container{{Resources: req(100)}},
		}, 500},
	}
	for _, tt := range tests {
		if got := podRequest(tt.pod, ResourceMemory); got != tt.want {
			t.Errorf("%s: memory request = %d, want %d", tt.name, got, tt.want)
		}
	}
	// Ephemeral storage has no pod-level form; pods cannot request inodes or pids.
	p := tests[4].pod
	if got := podRequest(p, ResourceEphemeralStorage); got != 200 {
		t.Errorf("ephemeral-storage request = %d, want 200 (containers only)", got)
	}
	if podRequest(p, ResourceInodes) != 0 || podRequest(p, ResourcePIDs) != 0 {
		t.Error("inodes or pids have a request")
	}
}

// diskPod has a writable layer, logs, and three volumes of which two count
// against the node's disk.
func diskPod() (*typesv1.Pod, *typesv1.PodStats) {
	p := pod("disk", 0)
	p.Containers[0].Resources = &typesv1.Resources{Requests: &typesv1.ResourceList{EphemeralStorageBytes: i64(10)}}
	p.Volumes = []*typesv1.Volume{
		{Name: "scratch", Type: "emptyDir"},
		{Name: "shm", Type: "emptyDir", Medium: "Memory"},
		{Name: "data", Type: "hostPath"},
		{Name: "claim", Type: "persistentVolumeClaim"},
	}
	fs := func(bytes, inodes int64) *typesv1.FsStats {
		return &typesv1.FsStats{UsedBytes: u64(bytes), InodesUsed: u64(inodes)}
	}
	ps := podStats("disk", Gi)
	ps.Containers[0].Rootfs = fs(1000, 1)
	ps.Containers[0].Logs = fs(200, 2)
	ps.VolumeStats = []*typesv1.VolumeStats{
		{Name: "scratch", Fs: fs(30, 4)}, {Name: "shm", Fs: fs(5000, 8)}, {Name: "data", Fs: fs(4, 16)}, {Name: "claim", Fs: fs(7000, 32)},
	}
	ps.ProcessStats = &typesv1.ProcessStats{ProcessCount: u64(12)}
	return p, ps
}

func TestCandidateUsage(t *testing.T) {
	tests := []struct {
		name        string
		dedicated   bool
		edit        func(*node)
		wantRes     Resource
		wantUsage   int64
		wantRequest int64
	}{
		{"memory: the working set against the memory request", false, func(n *node) { n.memoryWorkingSet(short) }, ResourceMemory, Gi, 0},
		{"nodefs on a shared disk: layer + logs + local volumes", false, func(n *node) { n.nodefsAvailable(Gi) }, ResourceEphemeralStorage, 1000 + 200 + 30 + 4, 10},
		{"nodefs with a dedicated imagefs: logs + local volumes", true, func(n *node) { n.nodefsAvailable(Gi) }, ResourceEphemeralStorage, 200 + 30 + 4, 10},
		{"dedicated imagefs: the writable layer", true, func(n *node) { n.imagefsAvailable(Gi) }, ResourceEphemeralStorage, 1000, 10},
		{"nodefs inodes on a shared disk", false, func(n *node) { n.req.NodeStats.Fs.InodesFree = u64(10) }, ResourceInodes, 1 + 2 + 4 + 16, 0},
		{"imagefs inodes, dedicated", true, func(n *node) { n.req.NodeStats.Runtime.ImageFs.InodesFree = u64(10) }, ResourceInodes, 1, 0},
		{"pids: the process count", false, func(n *node) { n.req.NodeStats.Rlimit.NumOfRunningProcesses = i64(32767) }, ResourcePIDs, 12, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			e, err := New(configWith(func(c *Config) {
				c.Hard = []string{"memory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%", "imagefs.available<15%", "imagefs.inodesFree<5%", "pid.available<10"}
			}), rec)
			if err != nil {
				t.Fatal(err)
			}
			p, ps := diskPod()
			n := newNode().pods(p, critical(pod("system", 1000)), pod("nostats", 0)).stats(ps)
			n.req.DedicatedImageFs = tt.dedicated
			tt.edit(n)
			n.req.Reclaimed = nil
			resp := runCycle(t, e, n.req)
			if len(resp.GetReclaim()) > 0 {
				// Disk signals reclaim first; ask again as the core would.
				n.req.Reclaimed = []*evictionv1.ReclaimResult{{}}
				n.at(time.Second)
				tt.edit(n)
				runCycle(t, e, n.req)
			}
			if rec.resource != tt.wantRes {
				t.Fatalf("ranked for %q, want %q", rec.resource, tt.wantRes)
			}
			if len(rec.candidates) != 2 {
				t.Fatalf("candidates = %d, want 2: the critical pod is never ranked", len(rec.candidates))
			}
			c := rec.candidates[0]
			if !c.HasStats || c.Usage != tt.wantUsage || c.Request != tt.wantRequest {
				t.Errorf("candidate = stats %v usage %d request %d, want usage %d request %d", c.HasStats, c.Usage, c.Request, tt.wantUsage, tt.wantRequest)
			}
			if nostats := rec.candidates[1]; nostats.HasStats || nostats.Usage != 0 {
				t.Errorf("pod without stats: %+v", nostats)
			}
		})
	}
}
