package evictionengine

import (
	"maps"
	"slices"
	"testing"
	"time"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

func TestMemoryNotifications(t *testing.T) {
	e := newEngine(t, func(c *Config) {
		c.Hard = []string{"memory.available<100Mi", "nodefs.available<10%"}
		c.Soft = []string{"memory.available<10%"}
		c.SoftGracePeriod = []string{"memory.available=1m"}
	})
	// Node: usage 3Gi, working set 2Gi, so 1Gi of inactive file.
	// Pods: 1.5Gi of usage for 1Gi of working set, so 512Mi inactive.
	a, b := podStats("a", 768*Mi), podStats("b", 256*Mi)
	a.Memory.UsageBytes = u64(Gi)
	b.Memory.UsageBytes = u64(512 * Mi)
	resp := runCycle(t, e, newNode().stats(a, b).req)
	var got []string
	for _, n := range resp.GetMemoryNotifications() {
		got = append(got, n.GetCgroup()+"@"+formatBinarySI(int64(n.GetUsageBytes())))
	}
	tenPercent := Value{Percentage: float32(10) / 100}.resolve(8 * Gi)
	want := []string{
		"@" + formatBinarySI(8*Gi-100*Mi+Gi),              // capacity - threshold + inactive
		"/kubepods@" + formatBinarySI(7*Gi-100*Mi+512*Mi), // allocatable - threshold + pods' inactive
		"@" + formatBinarySI(8*Gi-tenPercent+Gi),          // the soft threshold has its own level
	}
	if !slices.Equal(got, want) {
		t.Errorf("notifications:\n got  %q\n want %q", got, want)
	}

	// With the pods cgroup in the stats, its own inactive file places the
	// /kubepods level, as upstream: 2Gi of usage for 1.5Gi of working set.
	got = nil
	for _, n := range runCycle(t, e, newNode().stats(a, b).podsCgroup(2*Gi, 1536*Mi).req).GetMemoryNotifications() {
		got = append(got, n.GetCgroup()+"@"+formatBinarySI(int64(n.GetUsageBytes())))
	}
	if want := "/kubepods@" + formatBinarySI(7*Gi-100*Mi+512*Mi); !slices.Contains(got, want) {
		t.Errorf("notifications with the pods cgroup: %q, want %q among them", got, want)
	}

	// Without usage figures the node's level cannot be placed.
	req := newNode().req
	req.NodeStats.Memory.UsageBytes = nil
	req.Node.Allocatable = nil
	if got := runCycle(t, e, req).GetMemoryNotifications(); len(got) != 0 {
		t.Errorf("notifications without usage = %v", got)
	}
}

func TestReservation(t *testing.T) {
	tests := []struct {
		name     string
		hard     []string
		capacity *typesv1.ResourceList
		want     *typesv1.ResourceList
	}{
		{
			name:     "defaults: memory and nodefs against capacity",
			hard:     DefaultHard,
			capacity: &typesv1.ResourceList{MemoryBytes: i64(8 * Gi), EphemeralStorageBytes: i64(100 * Gi), CpuMillis: i64(4000)},
			want:     &typesv1.ResourceList{MemoryBytes: i64(100 * Mi), EphemeralStorageBytes: i64(Value{Percentage: float32(10) / 100}.resolve(100 * Gi))},
		},
		{
			name:     "a percentage of memory",
			hard:     []string{"memory.available<5%"},
			capacity: &typesv1.ResourceList{MemoryBytes: i64(8 * Gi)},
			want:     &typesv1.ResourceList{MemoryBytes: i64(Value{Percentage: float32(5) / 100}.resolve(8 * Gi))},
		},
		{
			name:     "no capacity given, nothing reserved",
			hard:     DefaultHard,
			capacity: nil,
			want:     &typesv1.ResourceList{},
		},
		{
			name:     "no hard thresholds",
			hard:     []string{},
			capacity: &typesv1.ResourceList{MemoryBytes: i64(8 * Gi)},
			want:     &typesv1.ResourceList{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, func(c *Config) {
				c.Hard = tt.hard
				c.Soft = []string{"memory.available<1Gi"} // soft thresholds reserve nothing
				c.SoftGracePeriod = []string{"memory.available=1m"}
			})
			got := e.Reservation(&evictionv1.GetNodeReservationRequest{Capacity: tt.capacity}).GetReserved()
			if got.GetMemoryBytes() != tt.want.GetMemoryBytes() || (got.MemoryBytes == nil) != (tt.want.MemoryBytes == nil) ||
				got.GetEphemeralStorageBytes() != tt.want.GetEphemeralStorageBytes() || (got.EphemeralStorageBytes == nil) != (tt.want.EphemeralStorageBytes == nil) ||
				got.CpuMillis != nil {
				t.Errorf("reserved = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNodeConditions(t *testing.T) {
	earlier := ts(t0.Add(-time.Hour))
	previous := []*typesv1.NodeCondition{
		{Type: ConditionMemoryPressure, Status: "False", LastTransitionTime: earlier},
		{Type: ConditionDiskPressure, Status: "False", LastTransitionTime: earlier},
		{Type: "Ready", Status: "True", LastTransitionTime: earlier},
	}
	got := nodeConditions([]string{ConditionDiskPressure}, previous, t0)
	want := []struct {
		kind, status, reason, message string
		transition                    time.Time
	}{
		{ConditionMemoryPressure, "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available", t0.Add(-time.Hour)},
		{ConditionDiskPressure, "True", "KubeletHasDiskPressure", "kubelet has disk pressure", t0},
		{ConditionPIDPressure, "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available", t0},
	}
	if len(got) != len(want) {
		t.Fatalf("conditions = %v", got)
	}
	for i, w := range want {
		c := got[i]
		if c.GetType() != w.kind || c.GetStatus() != w.status || c.GetReason() != w.reason || c.GetMessage() != w.message || !c.GetLastTransitionTime().AsTime().Equal(w.transition) {
			t.Errorf("condition %d = %v, want %+v", i, c, w)
		}
	}
	got = nodeConditions([]string{ConditionMemoryPressure, ConditionPIDPressure}, nil, t0)
	if got[0].GetReason() != "KubeletHasInsufficientMemory" || got[0].GetMessage() != "kubelet has insufficient memory available" ||
		got[2].GetReason() != "KubeletHasInsufficientPID" || got[2].GetMessage() != "kubelet has insufficient PID available" ||
		got[1].GetReason() != "KubeletHasNoDiskPressure" || got[1].GetMessage() != "kubelet has no disk pressure" {
		t.Errorf("conditions = %v", got)
	}
}

func TestPressureConditionsBySignal(t *testing.T) {
	tests := []struct {
		name string
		edit func(*node)
		want map[string]string
	}{
		{"none", func(*node) {}, map[string]string{ConditionMemoryPressure: "False", ConditionDiskPressure: "False", ConditionPIDPressure: "False"}},
		{"allocatable memory", func(n *node) { n.stats(podStats("a", 7*Gi-50*Mi)) }, map[string]string{ConditionMemoryPressure: "True", ConditionDiskPressure: "False", ConditionPIDPressure: "False"}},
		{"imagefs inodes and pids", func(n *node) {
			n.req.NodeStats.Runtime.ImageFs.InodesFree = u64(10)
			n.req.NodeStats.Rlimit.NumOfRunningProcesses = i64(32760)
		}, map[string]string{ConditionMemoryPressure: "False", ConditionDiskPressure: "True", ConditionPIDPressure: "True"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, func(c *Config) { c.Hard = append(c.Hard, "imagefs.inodesFree<5%", "pid.available<100") })
			n := newNode()
			tt.edit(n)
			if got := conditionStatus(runCycle(t, e, n.req)); !maps.Equal(got, tt.want) {
				t.Errorf("conditions = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestKubepodsLevelMeansMet recreates issue 18's lost notification: page
// cache no listed pod owns (a deleted pod's) is charged to /kubepods, which
// the kernel watches. Whatever that cache, the usage at which the kernel
// fires for /kubepods must be where allocatableMemory.available is met:
// earlier, the cycle it starts finds nothing to do and the kernel, which
// signals a crossing once, stays quiet at the real one.
func TestKubepodsLevelMeansMet(t *testing.T) {
	for _, tt := range []struct {
		name string
		// foreignInactive and foreignActive are page cache charged to
		// /kubepods that no pod owns, on the inactive and active lists.
		foreignInactive, foreignActive int64
	}{
		{"no foreign cache", 0, 0},
		{"a deleted pod's inactive cache", 30 * Mi, 0},
		{"a deleted pod's cache, partly active", 30 * Mi, 20 * Mi},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, func(c *Config) { c.Hard = []string{"memory.available<100Mi", "allocatableMemory.available<300Mi"} })
			// The hog's cgroup, with podUsage of tmpfs (working set) and 4Mi of
			// its own inactive file; /kubepods adds the foreign cache.
			sample := func(podUsage int64) *evictionv1.SynchronizeRequest {
				ps := podStats("hog", podUsage)
				ps.Memory.UsageBytes = u64(podUsage + 4*Mi)
				n := newNode().pods(pod("hog", 0)).stats(ps)
				n.podsCgroup(podUsage+4*Mi+tt.foreignInactive+tt.foreignActive, podUsage+tt.foreignActive)
				return n.req
			}
			var level int64
			for _, n := range runCycle(t, e, sample(10*Mi)).GetMemoryNotifications() {
				if n.GetCgroup() == "/kubepods" {
					level = int64(n.GetUsageBytes())
				}
			}
			if level == 0 {
				t.Fatal("no /kubepods notification asked for")
			}
			// The hog's usage at which /kubepods usage passes the level by
			// a page: the kernel has fired.
			fires := level - 4*Mi - tt.foreignInactive - tt.foreignActive + 4096
			if got := evictedUIDs(runCycle(t, e, sample(fires))); !slices.Equal(got, []string{"hog"}) {
				t.Errorf("a page past the notification level (hog at %d) evicted %v, want the hog", fires, got)
			}
			if got := evictedUIDs(runCycle(t, e, sample(fires-Mi))); len(got) != 0 {
				t.Errorf("1Mi below the notification level evicted %v, want none: the level is late", got)
			}
		})
	}
}
