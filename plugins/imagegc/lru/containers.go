package lru

import (
	"cmp"
	"slices"
	"time"

	imagegcv1 "github.com/microlet/microlet/proto/microlet/imagegc/v1"
	"github.com/microlet/microlet/sdk"
)

// PlanContainers decides which dead containers and not-ready sandboxes to
// remove, oldest first (upstream containerGC.evictContainers and
// evictSandboxes).
//
// Containers: those created less than container_minimum_age ago stay. Of the
// rest, containers of deleted pods all go. Then each container of each pod
// keeps its newest max_per_pod_container dead instances. If more than
// max_containers are left, every (pod, container) is first cut to an equal
// share of max_containers (at least one each), then the oldest go across
// all pods until max_containers remain.
//
// Sandboxes: a sandbox goes once no container is left in it, counting the
// containers this plan removes. Each live pod keeps its newest sandbox, which
// the kubelet needs to name the next one; deleted pods keep none.
//
// remove_all (node-level reclaim) removes every dead container, whatever its
// age and the limits, and every sandbox this leaves removable.
func PlanContainers(cfg Config, gc *imagegcv1.ContainerGCContext, containers []*imagegcv1.DeadContainer, sandboxes []*imagegcv1.Sandbox) (*imagegcv1.PlanContainerGCResponse, error) {
	if !gc.GetNow().IsValid() {
		return nil, sdk.Invalid("ContainerGCContext.now is not set or is out of range")
	}
	now := gc.GetNow().AsTime()
	created := func(c *imagegcv1.DeadContainer) time.Time { return timeOr(c.GetCreatedAt(), now) }

	var removed []*imagegcv1.DeadContainer
	if gc.GetRemoveAll() {
		removed = append(removed, containers...)
	} else {
		removed = evictContainers(cfg, now, containers, created)
	}
	slices.SortFunc(removed, func(a, b *imagegcv1.DeadContainer) int {
		return cmp.Or(created(a).Compare(created(b)), cmp.Compare(a.GetId(), b.GetId()))
	})
	resp := &imagegcv1.PlanContainerGCResponse{}
	leaving := map[string]int32{}
	for _, c := range removed {
		resp.RemoveContainerIds = append(resp.RemoveContainerIds, c.GetId())
		leaving[c.GetSandboxId()]++
	}
	resp.RemoveSandboxIds = evictSandboxes(now, sandboxes, leaving)
	return resp, nil
}

// unit is the kubelet's evictUnit: one container of one pod.
type unit struct{ podUID, container string }

func evictContainers(cfg Config, now time.Time, containers []*imagegcv1.DeadContainer, created func(*imagegcv1.DeadContainer) time.Time) []*imagegcv1.DeadContainer {
	newestGCTime := now.Add(-cfg.ContainerMinimumAge.Duration)
	units := map[unit][]*imagegcv1.DeadContainer{}
	deleted := map[unit]bool{}
	for _, c := range containers {
		if created(c).After(newestGCTime) {
			continue
		}
		key := unit{c.GetPodUid(), c.GetContainerName()}
		units[key] = append(units[key], c)
		deleted[key] = deleted[key] || c.GetPodDeleted()
	}
	newestFirst := func(a, b *imagegcv1.DeadContainer) int {
		return cmp.Or(created(b).Compare(created(a)), cmp.Compare(a.GetId(), b.GetId()))
	}
	var removed []*imagegcv1.DeadContainer
	keepNewest := func(n int) {
		for key, cs := range units {
			if len(cs) > n {
				slices.SortFunc(cs, newestFirst)
				removed = append(removed, cs[n:]...)
				units[key] = cs[:n]
			}
		}
	}
	total := func() int {
		n := 0
		for _, cs := range units {
			n += len(cs)
		}
		return n
	}

	for key, cs := range units {
		if deleted[key] {
			removed = append(removed, cs...)
			delete(units, key)
		}
	}
	if cfg.MaxPerPodContainer >= 0 {
		keepNewest(cfg.MaxPerPodContainer)
	}
	if cfg.MaxContainers >= 0 && total() > cfg.MaxContainers {
		keepNewest(max(1, cfg.MaxContainers/len(units)))
		if excess := total() - cfg.MaxContainers; excess > 0 {
			var rest []*imagegcv1.DeadContainer
			for _, cs := range units {
				rest = append(rest, cs...)
			}
			slices.SortFunc(rest, newestFirst)
			removed = append(removed, rest[len(rest)-excess:]...)
		}
	}
	return removed
}

// evictSandboxes lists the sandboxes to remove, oldest first. leaving counts,
// per sandbox, the containers this plan removes from it.
func evictSandboxes(now time.Time, sandboxes []*imagegcv1.Sandbox, leaving map[string]int32) []string {
	created := func(s *imagegcv1.Sandbox) time.Time { return timeOr(s.GetCreatedAt(), now) }
	newestFirst := func(a, b *imagegcv1.Sandbox) int {
		return cmp.Or(created(b).Compare(created(a)), cmp.Compare(a.GetId(), b.GetId()))
	}
	byPod := map[string][]*imagegcv1.Sandbox{}
	for _, s := range sandboxes {
		byPod[s.GetPodUid()] = append(byPod[s.GetPodUid()], s)
	}
	var removed []*imagegcv1.Sandbox
	for _, group := range byPod {
		slices.SortFunc(group, newestFirst)
		keep := 1
		if slices.ContainsFunc(group, (*imagegcv1.Sandbox).GetPodDeleted) {
			keep = 0
		}
		for i, s := range group {
			if i >= keep && s.GetContainerCount()-leaving[s.GetId()] <= 0 {
				removed = append(removed, s)
			}
		}
	}
	slices.SortFunc(removed, func(a, b *imagegcv1.Sandbox) int { return newestFirst(b, a) })
	ids := make([]string, len(removed))
	for i, s := range removed {
		ids[i] = s.GetId()
	}
	return ids
}
