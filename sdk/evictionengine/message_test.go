package evictionengine

import (
	"maps"
	"testing"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

func TestEvictionMessage(t *testing.T) {
	memory := Threshold{Signal: SignalMemoryAvailable, Value: Value{Quantity: 100 * Mi, text: "100Mi"}}
	nodefs := Threshold{Signal: SignalNodeFsAvailable, Value: Value{Percentage: 0.1, text: "10%"}}
	inodes := Threshold{Signal: SignalNodeFsInodesFree, Value: Value{Percentage: 0.05, text: "5%"}}

	// Two containers and a sidecar; "app" uses more than it asked for.
	memPod := func() (*typesv1.Pod, *typesv1.PodStats) {
		p := pod("web", 0)
		p.Containers = []*typesv1.Container{
			{Name: "app", Resources: &typesv1.Resources{Requests: &typesv1.ResourceList{MemoryBytes: i64(256 * Mi), EphemeralStorageBytes: i64(Gi)}}},
			{Name: "helper", Resources: &typesv1.Resources{Requests: &typesv1.ResourceList{MemoryBytes: i64(512 * Mi)}}},
		}
		p.InitContainers = []*typesv1.Container{{Name: "proxy", Restartable: true}}
		ps := &typesv1.PodStats{
			PodRef: &typesv1.PodReference{Uid: "web"},
			Memory: &typesv1.MemoryStats{WorkingSetBytes: u64(900 * Mi)},
			Containers: []*typesv1.ContainerStats{
				{Name: "app", Memory: &typesv1.MemoryStats{WorkingSetBytes: u64(300 * Mi)},
					Rootfs: &typesv1.FsStats{UsedBytes: u64(2 * Gi)}, Logs: &typesv1.FsStats{UsedBytes: u64(Gi)}},
				{Name: "helper", Memory: &typesv1.MemoryStats{WorkingSetBytes: u64(100 * Mi)},
					Rootfs: &typesv1.FsStats{UsedBytes: u64(Mi)}},
				{Name: "proxy", Memory: &typesv1.MemoryStats{WorkingSetBytes: u64(1000)}},
				{Name: "debugger", Memory: &typesv1.MemoryStats{WorkingSetBytes: u64(Gi)}},
			},
		}
		return p, ps
	}

	tests := []struct {
		name      string
		threshold Threshold
		obs       observation
		edit      func(*typesv1.Pod, *typesv1.PodStats) (*typesv1.Pod, *typesv1.PodStats)
		want      string
		wantAnn   map[string]string
	}{
		{
			name:      "memory: the containers above their requests, an ephemeral container ignored",
			threshold: memory,
			obs:       observation{available: 80 * Mi, capacity: 8 * Gi},
			want: "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. " +
				"Container app was using 300Mi, request is 256Mi, has larger consumption of memory. " +
				"Container proxy was using 1k, request is 0, has larger consumption of memory. ",
			wantAnn: map[string]string{"offending_containers": "app,proxy", "offending_containers_usage": "300Mi,1k", "starved_resource": "memory"},
		},
		{
			name:      "an available amount that is no round number of binary units",
			threshold: memory,
			obs:       observation{available: 80*Mi + 1, capacity: 8 * Gi},
			edit: func(p *typesv1.Pod, ps *typesv1.PodStats) (*typesv1.Pod, *typesv1.PodStats) {
				ps.Containers = nil
				return p, ps
			},
			want:    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 83886081. ",
			wantAnn: map[string]string{"offending_containers": "", "offending_containers_usage": "", "starved_resource": "memory"},
		},
		{
			name:      "memory with pod-level resources names the pod too",
			threshold: memory,
			obs:       observation{available: 80 * Mi, capacity: 8 * Gi},
			edit: func(p *typesv1.Pod, ps *typesv1.PodStats) (*typesv1.Pod, *typesv1.PodStats) {
				p.PodResources = &typesv1.Resources{Requests: &typesv1.ResourceList{MemoryBytes: i64(Gi)}}
				ps.Containers = ps.Containers[1:2]
				return p, ps
			},
			want: "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. " +
				"Pod web was using 900Mi, request is 1Gi, has larger consumption of memory. ",
			wantAnn: map[string]string{"offending_pod": "web", "offending_pod_usage": "900Mi",
				"offending_containers": "", "offending_containers_usage": "", "starved_resource": "memory"},
		},
		{
			// 10% is a float32 upstream, so 10% of 100Gi is 160 bytes over 10Gi.
			name:      "disk: a percentage threshold resolved, writable layer plus logs per container",
			threshold: nodefs,
			obs:       observation{available: 5 * Gi, capacity: 100 * Gi},
			want: "The node was low on resource: ephemeral-storage. Threshold quantity: 10737418400, available: 5Gi. " +
				"Container app was using 3Gi, request is 1Gi, has larger consumption of ephemeral-storage. ",
			wantAnn: map[string]string{"offending_containers": "app", "offending_containers_usage": "3Gi", "starved_resource": "ephemeral-storage"},
		},
		{
			name:      "inodes: counts in decimal units, no container named",
			threshold: inodes,
			obs:       observation{available: 40000, capacity: 1000000},
			want:      "The node was low on resource: inodes. Threshold quantity: 50000, available: 40k. ",
			wantAnn:   map[string]string{"offending_containers": "", "offending_containers_usage": "", "starved_resource": "inodes"},
		},
		{
			name:      "a pod without stats: no blame, no annotations",
			threshold: memory,
			obs:       observation{available: 80 * Mi, capacity: 8 * Gi},
			edit: func(p *typesv1.Pod, _ *typesv1.PodStats) (*typesv1.Pod, *typesv1.PodStats) {
				return p, nil
			},
			want:    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. ",
			wantAnn: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ps := memPod()
			if tt.edit != nil {
				p, ps = tt.edit(p, ps)
			}
			got, ann := evictionMessage(tt.threshold, tt.obs, p, ps)
			if got != tt.want {
				t.Errorf("message:\n got  %q\n want %q", got, tt.want)
			}
			if !maps.Equal(ann, tt.wantAnn) {
				t.Errorf("annotations:\n got  %v\n want %v", ann, tt.wantAnn)
			}
		})
	}
}

func TestEvictionsCarryTheMessage(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Hard = []string{"memory.available<100Mi"} })
	resp := runCycle(t, e, newNode().memoryWorkingSet(short).
		pods(withMemoryRequest(pod("a", 0), 512*Mi)).stats(podStats("a", Gi)).req)
	if len(resp.GetEvictions()) != 1 {
		t.Fatalf("evictions = %v", evictedUIDs(resp))
	}
	ev := resp.GetEvictions()[0]
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. " +
		"Container app was using 1Gi, request is 512Mi, has larger consumption of memory. "
	if ev.GetMessage() != want || ev.GetSignal() != "memory.available" || ev.GetGracePeriodSeconds() != 1 {
		t.Errorf("eviction = %q signal %q grace %d", ev.GetMessage(), ev.GetSignal(), ev.GetGracePeriodSeconds())
	}
	if ev.GetAnnotations()[OffendingContainersKey] != "app" {
		t.Errorf("annotations = %v", ev.GetAnnotations())
	}
}
