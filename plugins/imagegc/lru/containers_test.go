package lru

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	imagegcv1 "github.com/microlet/microlet/proto/microlet/imagegc/v1"
)

// dead is a dead container of pod/container created age ago, in sandbox "sb-<pod>".
func dead(id, pod, container string, age time.Duration) *imagegcv1.DeadContainer {
	return &imagegcv1.DeadContainer{Id: id, PodUid: pod, ContainerName: container, SandboxId: "sb-" + pod, CreatedAt: ago(age)}
}

func deletedPod(c *imagegcv1.DeadContainer) *imagegcv1.DeadContainer {
	c.PodDeleted = true
	return c
}

func TestPlanContainers(t *testing.T) {
	tests := []struct {
		name       string
		edit       func(*Config)
		removeAll  bool
		containers []*imagegcv1.DeadContainer
		want       []string
	}{
		{
			name: "defaults: the newest dead instance of each container stays",
			containers: []*imagegcv1.DeadContainer{
				dead("web-app-3", "web", "app", 1*time.Minute),
				dead("web-app-1", "web", "app", 3*time.Minute),
				dead("web-app-2", "web", "app", 2*time.Minute),
				dead("web-log-1", "web", "log", 5*time.Minute),
				dead("db-app-1", "db", "app", 4*time.Minute),
			},
			want: []string{"web-app-1", "web-app-2"},
		},
		{
			name: "container_minimum_age: younger containers are not even counted",
			edit: func(c *Config) { c.ContainerMinimumAge.Duration = 150 * time.Second },
			containers: []*imagegcv1.DeadContainer{
				dead("a-1", "p", "a", time.Minute),
				dead("a-2", "p", "a", 3*time.Minute),
				dead("a-3", "p", "a", 4*time.Minute),
			},
			want: []string{"a-3"},
		},
		{
			name: "max_per_pod_container 0 keeps none, -1 keeps all",
			edit: func(c *Config) { c.MaxPerPodContainer = 0 },
			containers: []*imagegcv1.DeadContainer{
				dead("a-1", "p", "a", time.Minute),
				dead("b-1", "q", "b", 2*time.Minute),
			},
			want: []string{"b-1", "a-1"},
		},
		{
			name: "no per-container limit",
			edit: func(c *Config) { c.MaxPerPodContainer = -1 },
			containers: []*imagegcv1.DeadContainer{
				dead("a-1", "p", "a", time.Minute),
				dead("a-2", "p", "a", 2*time.Minute),
			},
		},
		{
			name: "containers of deleted pods all go, if old enough",
			edit: func(c *Config) { c.ContainerMinimumAge.Duration = 30 * time.Second },
			containers: []*imagegcv1.DeadContainer{
				deletedPod(dead("gone-1", "gone", "a", time.Minute)),
				deletedPod(dead("gone-2", "gone", "a", 10*time.Second)),
				deletedPod(dead("gone-3", "gone", "b", 2*time.Minute)),
				dead("live-1", "live", "a", 3*time.Minute),
			},
			want: []string{"gone-3", "gone-1"},
		},
		{
			name: "max_containers: an equal share per container first",
			edit: func(c *Config) { c.MaxPerPodContainer, c.MaxContainers = -1, 4 },
			containers: []*imagegcv1.DeadContainer{
				dead("p-1", "p", "a", 1*time.Minute),
				dead("p-2", "p", "a", 2*time.Minute),
				dead("p-3", "p", "a", 3*time.Minute),
				dead("p-4", "p", "a", 4*time.Minute),
				dead("q-1", "q", "a", 10*time.Minute),
				dead("q-2", "q", "a", 20*time.Minute),
			},
			// 4 / 2 units = 2 each: p keeps p-1 and p-2, q keeps both.
			want: []string{"p-4", "p-3"},
		},
		{
			name: "max_containers: then the oldest across pods",
			edit: func(c *Config) { c.MaxPerPodContainer, c.MaxContainers = -1, 2 },
			containers: []*imagegcv1.DeadContainer{
				dead("p-1", "p", "a", 1*time.Minute),
				dead("p-2", "p", "a", 2*time.Minute),
				dead("q-1", "q", "a", 10*time.Minute),
				dead("r-1", "r", "a", 5*time.Minute),
			},
			// 2 / 3 units rounds up to 1 each: p-2 goes, leaving 3 for 2
			// places; the oldest of those, q-1, goes too.
			want: []string{"q-1", "p-2"},
		},
		{
			name: "max_containers 0 removes every dead container",
			edit: func(c *Config) { c.MaxContainers = 0 },
			containers: []*imagegcv1.DeadContainer{
				dead("p-1", "p", "a", 1*time.Minute),
				dead("q-1", "q", "a", 2*time.Minute),
			},
			want: []string{"q-1", "p-1"},
		},
		{
			name:      "remove_all: every dead container, whatever its age and the limits",
			edit:      func(c *Config) { c.ContainerMinimumAge.Duration = time.Hour; c.MaxPerPodContainer = -1 },
			removeAll: true,
			containers: []*imagegcv1.DeadContainer{
				dead("p-1", "p", "a", 1*time.Minute),
				dead("q-1", "q", "a", 2*time.Minute),
			},
			want: []string{"q-1", "p-1"},
		},
		{
			name: "ties in age are broken by ID",
			edit: func(c *Config) { c.MaxPerPodContainer = 0 },
			containers: []*imagegcv1.DeadContainer{
				dead("b", "p", "a", time.Minute),
				dead("a", "p", "a", time.Minute),
			},
			want: []string{"a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := defaults()
			if tt.edit != nil {
				tt.edit(&cfg)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("config: %v", err)
			}
			resp, err := PlanContainers(cfg, &imagegcv1.ContainerGCContext{Now: timestamppb.New(now), RemoveAll: tt.removeAll}, tt.containers, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(resp.GetRemoveContainerIds(), tt.want) {
				t.Errorf("removed %v, want %v (oldest first)", resp.GetRemoveContainerIds(), tt.want)
			}
		})
	}
}

func sandbox(id, pod string, age time.Duration, containers int32) *imagegcv1.Sandbox {
	return &imagegcv1.Sandbox{Id: id, PodUid: pod, CreatedAt: ago(age), ContainerCount: containers}
}

func TestPlanSandboxes(t *testing.T) {
	gone := func(s *imagegcv1.Sandbox) *imagegcv1.Sandbox {
		s.PodDeleted = true
		return s
	}
	tests := []struct {
		name       string
		removeAll  bool
		containers []*imagegcv1.DeadContainer
		sandboxes  []*imagegcv1.Sandbox
		want       []string
	}{
		{
			name: "a live pod keeps its newest sandbox; older empty ones go",
			sandboxes: []*imagegcv1.Sandbox{
				sandbox("live-3", "live", 1*time.Minute, 0),
				sandbox("live-1", "live", 3*time.Minute, 0),
				sandbox("live-2", "live", 2*time.Minute, 0),
			},
			want: []string{"live-1", "live-2"},
		},
		{
			name: "sandboxes still holding containers stay",
			sandboxes: []*imagegcv1.Sandbox{
				sandbox("live-2", "live", 1*time.Minute, 0),
				sandbox("live-1", "live", 2*time.Minute, 1),
			},
		},
		{
			name: "a deleted pod keeps none of its empty sandboxes",
			sandboxes: []*imagegcv1.Sandbox{
				gone(sandbox("gone-2", "gone", 1*time.Minute, 0)),
				gone(sandbox("gone-1", "gone", 2*time.Minute, 0)),
				gone(sandbox("gone-busy", "gone", 3*time.Minute, 2)),
			},
			want: []string{"gone-1", "gone-2"},
		},
		{
			name: "a sandbox emptied by this plan goes with its containers",
			containers: []*imagegcv1.DeadContainer{
				deletedPod(dead("c-1", "gone", "a", time.Minute)),
				deletedPod(dead("c-2", "gone", "b", time.Minute)),
			},
			sandboxes: []*imagegcv1.Sandbox{
				gone(sandbox("sb-gone", "gone", 5*time.Minute, 2)),
			},
			want: []string{"sb-gone"},
		},
		{
			name:      "remove_all still keeps a live pod's newest sandbox",
			removeAll: true,
			containers: []*imagegcv1.DeadContainer{
				dead("c-1", "live", "a", time.Minute),
			},
			sandboxes: []*imagegcv1.Sandbox{
				sandbox("sb-live", "live", 1*time.Minute, 1),
				sandbox("live-old", "live", 9*time.Minute, 0),
			},
			want: []string{"live-old"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := PlanContainers(defaults(), &imagegcv1.ContainerGCContext{Now: timestamppb.New(now), RemoveAll: tt.removeAll}, tt.containers, tt.sandboxes)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(resp.GetRemoveSandboxIds(), tt.want) {
				t.Errorf("removed sandboxes %v, want %v (oldest first)", resp.GetRemoveSandboxIds(), tt.want)
			}
		})
	}
}

func TestPlanContainersNeedsNow(t *testing.T) {
	if _, err := PlanContainers(defaults(), &imagegcv1.ContainerGCContext{}, nil, nil); err == nil || !strings.Contains(err.Error(), "ContainerGCContext.now is not set") {
		t.Errorf("PlanContainers without now: %v", err)
	}
}
