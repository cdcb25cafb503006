package evictionengine

import (
	"testing"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

func TestLocalStorageLimits(t *testing.T) {
	fs := func(used int64) *typesv1.FsStats { return &typesv1.FsStats{UsedBytes: u64(used)} }
	limits := func(storage int64) *typesv1.Resources {
		return &typesv1.Resources{Limits: &typesv1.ResourceList{EphemeralStorageBytes: i64(storage)}}
	}
	tests := []struct {
		name        string
		dedicated   bool
		edit        func(*typesv1.Pod, *typesv1.PodStats)
		wantSignal  string
		wantMessage string
	}{
		{
			name: "within every limit",
			edit: func(p *typesv1.Pod, ps *typesv1.PodStats) {
				p.Volumes = []*typesv1.Volume{{Name: "cache", Type: "emptyDir", SizeLimitBytes: i64(Gi)}}
				ps.VolumeStats = []*typesv1.VolumeStats{{Name: "cache", Fs: fs(Gi)}}
				p.Containers[0].Resources = limits(2 * Gi)
				ps.EphemeralStorage = fs(2 * Gi)
				ps.Containers[0].Rootfs, ps.Containers[0].Logs = fs(Gi), fs(Gi)
			},
		},
		{
			name: "an emptyDir over its sizeLimit",
			edit: func(p *typesv1.Pod, ps *typesv1.PodStats) {
				p.Volumes = []*typesv1.Volume{{Name: "cache", Type: "emptyDir", SizeLimitBytes: i64(Gi)}}
				ps.VolumeStats = []*typesv1.VolumeStats{{Name: "cache", Fs: fs(Gi + 1)}}
			},
			wantSignal:  "emptydirfs.limit",
			wantMessage: `Usage of EmptyDir volume "cache" exceeds the limit "1Gi". `,
		},
		{
			name: "the pod over the sum of its containers' limits",
			edit: func(p *typesv1.Pod, ps *typesv1.PodStats) {
				p.Containers = append(p.Containers, &typesv1.Container{Name: "side", Resources: limits(512 * Mi)})
				p.Containers[0].Resources = limits(Gi)
				ps.EphemeralStorage = fs(2 * Gi)
			},
			wantSignal:  "ephemeralpodfs.limit",
			wantMessage: "Pod ephemeral local storage usage exceeds the total limit of containers 1536Mi. ",
		},
		{
			name: "a container over its limit: layer and logs on a shared disk",
			edit: func(p *typesv1.Pod, ps *typesv1.PodStats) {
				p.Containers = append(p.Containers, &typesv1.Container{Name: "side"})
				p.Containers[0].Resources = limits(Gi)
				ps.EphemeralStorage = fs(Gi) // counted apart: the pod total is within the limit
				ps.Containers[0].Rootfs, ps.Containers[0].Logs = fs(Gi), fs(1)
			},
			wantSignal:  "ephemeralcontainerfs.limit",
			wantMessage: `Container app exceeded its local ephemeral storage limit "1Gi". `,
		},
		{
			name:      "with a dedicated imagefs only the logs count",
			dedicated: true,
			edit: func(p *typesv1.Pod, ps *typesv1.PodStats) {
				p.Containers = append(p.Containers, &typesv1.Container{Name: "side"})
				p.Containers[0].Resources = limits(Gi)
				ps.Containers[0].Rootfs, ps.Containers[0].Logs = fs(Gi), fs(1)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, func(*Config) {})
			p, ps := pod("a", 0), podStats("a", Gi)
			tt.edit(p, ps)
			n := newNode().pods(p, pod("nostats", 0)).stats(ps)
			n.req.DedicatedImageFs = tt.dedicated
			resp := runCycle(t, e, n.req)
			if tt.wantSignal == "" {
				if len(resp.GetEvictions()) != 0 {
					t.Errorf("evicted %v within limits", evictedUIDs(resp))
				}
				return
			}
			if len(resp.GetEvictions()) != 1 {
				t.Fatalf("evictions = %v, want [a]", evictedUIDs(resp))
			}
			ev := resp.GetEvictions()[0]
			if ev.GetPodUid() != "a" || ev.GetSignal() != tt.wantSignal || ev.GetMessage() != tt.wantMessage || ev.GetGracePeriodSeconds() != 1 {
				t.Errorf("eviction = %v", ev)
			}
		})
	}
}

func TestLocalStorageSparesCriticalPods(t *testing.T) {
	e := newEngine(t, func(*Config) {})
	p, ps := critical(pod("a", 0)), podStats("a", Gi)
	p.Volumes = []*typesv1.Volume{{Name: "cache", Type: "emptyDir", SizeLimitBytes: i64(1)}}
	ps.VolumeStats = []*typesv1.VolumeStats{{Name: "cache", Fs: &typesv1.FsStats{UsedBytes: u64(2)}}}
	if resp := runCycle(t, e, newNode().pods(p).stats(ps).req); len(resp.GetEvictions()) != 0 {
		t.Errorf("evicted a critical pod: %v", evictedUIDs(resp))
	}
}
