package evictionengine

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

const (
	Ki = int64(1) << 10
	Mi = int64(1) << 20
	Gi = int64(1) << 30
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// fifo keeps the request's order and admits as upstream: the engine's
// tests look at the engine, the strategies' tests at their ranking.
type fifo struct{}

func (fifo) Rank(Resource, time.Time, []Candidate) {}
func (fifo) Admit(a AdmitContext) Admission        { return UpstreamAdmission(a) }
func u64(v int64) *uint64                          { u := uint64(v); return &u }
func i64(v int64) *int64                           { return &v }
func ts(t time.Time) *timestamppb.Timestamp        { return timestamppb.New(t) }
func at(d time.Duration) *timestamppb.Timestamp    { return ts(t0.Add(d)) }
func newEngine(t *testing.T, edit func(*Config)) *Engine {
	t.Helper()
	e, err := New(configWith(edit), fifo{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// node is a request's node and node stats, built up by the with* helpers.
type node struct {
	req *evictionv1.SynchronizeRequest
}

// newNode is a node with 8Gi of memory, 7Gi allocatable, and healthy
// filesystems and pids, observed at t0.
func newNode() *node {
	n := &node{req: &evictionv1.SynchronizeRequest{
		Now: ts(t0),
		Node: &typesv1.Node{
			Name:        "node-a",
			Capacity:    &typesv1.ResourceList{MemoryBytes: i64(8 * Gi), EphemeralStorageBytes: i64(100 * Gi)},
			Allocatable: &typesv1.ResourceList{MemoryBytes: i64(7 * Gi)},
		},
		NodeStats: &typesv1.NodeStats{
			Memory: &typesv1.MemoryStats{Time: ts(t0), WorkingSetBytes: u64(2 * Gi), UsageBytes: u64(3 * Gi)},
			Fs:     fsStats(t0, 100*Gi, 50*Gi, 1000000, 500000),
			Runtime: &typesv1.RuntimeStats{
				ImageFs: fsStats(t0, 100*Gi, 50*Gi, 1000000, 500000),
			},
			Rlimit: &typesv1.RlimitStats{Time: ts(t0), MaxPid: i64(32768), NumOfRunningProcesses: i64(300)},
		},
	}}
	return n
}

func fsStats(when time.Time, capacity, available, inodes, inodesFree int64) *typesv1.FsStats {
	return &typesv1.FsStats{Time: ts(when), CapacityBytes: u64(capacity), AvailableBytes: u64(available), Inodes: u64(inodes), InodesFree: u64(inodesFree)}
}

// at moves the request and every node stat to t0+d.
func (n *node) at(d time.Duration) *node {
	s := n.req.NodeStats
	n.req.Now = at(d)
	s.Memory.Time, s.Fs.Time, s.Runtime.ImageFs.Time, s.Rlimit.Time = at(d), at(d), at(d), at(d)
	return n
}

func (n *node) memoryWorkingSet(ws int64) *node {
	n.req.NodeStats.Memory.WorkingSetBytes = u64(ws)
	return n
}

func (n *node) nodefsAvailable(available int64) *node {
	n.req.NodeStats.Fs.AvailableBytes = u64(available)
	return n
}

func (n *node) imagefsAvailable(available int64) *node {
	n.req.NodeStats.Runtime.ImageFs.AvailableBytes = u64(available)
	return n
}

func (n *node) pods(pods ...*typesv1.Pod) *node {
	n.req.Pods = append(n.req.Pods, pods...)
	return n
}

func (n *node) stats(stats ...*typesv1.PodStats) *node {
	n.req.PodStats = append(n.req.PodStats, stats...)
	return n
}

func (n *node) state(st []byte) *node {
	n.req.State = st
	return n
}

// pod is a Burstable pod with one container "app".
func pod(uid string, priority int32) *typesv1.Pod {
	return &typesv1.Pod{
		Uid: uid, Namespace: "default", Name: uid, QosClass: "Burstable", Priority: priority,
		TerminationGracePeriodSeconds: 30,
		Containers:                    []*typesv1.Container{{Name: "app"}},
	}
}

func withMemoryRequest(p *typesv1.Pod, bytes int64) *typesv1.Pod {
	p.Containers[0].Resources = &typesv1.Resources{Requests: &typesv1.ResourceList{MemoryBytes: i64(bytes)}}
	return p
}

func critical(p *typesv1.Pod) *typesv1.Pod {
	p.Critical = true
	return p
}

// podStats is a pod using ws of memory, all of it in container "app".
func podStats(uid string, ws int64) *typesv1.PodStats {
	return &typesv1.PodStats{
		PodRef: &typesv1.PodReference{Uid: uid, Name: uid, Namespace: "default"},
		Memory: &typesv1.MemoryStats{WorkingSetBytes: u64(ws), UsageBytes: u64(ws)},
		Containers: []*typesv1.ContainerStats{{
			Name:   "app",
			Memory: &typesv1.MemoryStats{WorkingSetBytes: u64(ws)},
		}},
	}
}

// podsCgroup gives the node the "pods" system container: the cgroup of
// every pod, with usage and working set of its own.
func (n *node) podsCgroup(usage, ws int64) *node {
	n.req.NodeStats.SystemContainers = []*typesv1.ContainerStats{{
		Name:   "pods",
		Memory: &typesv1.MemoryStats{Time: ts(t0), UsageBytes: u64(usage), WorkingSetBytes: u64(ws)},
	}}
	return n
}

// runCycle runs one cycle and fails the test on error.
func runCycle(t *testing.T, e *Engine, req *evictionv1.SynchronizeRequest) *evictionv1.SynchronizeResponse {
	t.Helper()
	res, err := e.Synchronize(req)
	if err != nil {
		t.Fatalf("Synchronize: %v", err)
	}
	for _, w := range res.Warnings {
		t.Logf("warning: %s", w)
	}
	return res.Response
}

func evictedUIDs(resp *evictionv1.SynchronizeResponse) []string {
	var out []string
	for _, e := range resp.GetEvictions() {
		out = append(out, e.GetPodUid())
	}
	return out
}

func conditionStatus(resp *evictionv1.SynchronizeResponse) map[string]string {
	out := map[string]string{}
	for _, c := range resp.GetConditions() {
		out[c.GetType()] = c.GetStatus()
	}
	return out
}
