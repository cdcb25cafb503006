// Package podconfig merges the pod sources into one stream of incremental
// pod updates for the syncLoop, as the kubelet's PodConfig does in
// incremental mode (pkg/kubelet/config/config.go): ADD, UPDATE, DELETE,
// REMOVE and RECONCILE, per source. Beyond upstream, it keeps one pod per
// namespace/name across sources: a pod whose name another source already
// provides is rejected, with a reason, until that pod is gone.
package podconfig

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/microlet/microlet/core/pods/podsource"
)

// updatesBuffer is upstream's buffer between the merge and the syncLoop.
const updatesBuffer = 50

// PodConfig merges pod sources.
type PodConfig struct {
	log     hclog.Logger
	sources []podsource.Source
	names   []string
	updates chan PodUpdate

	mu    sync.Mutex
	store *store
}

// New makes a PodConfig for the given sources, whose names must be unique.
func New(log hclog.Logger, sources ...podsource.Source) (*PodConfig, error) {
	names := make([]string, len(sources))
	seen := sets.New[string]()
	for i, src := range sources {
		name := src.Name()
		if name == "" {
			return nil, errors.New("pod source with an empty name")
		}
		if seen.Has(name) {
			return nil, fmt.Errorf("two pod sources named %q", name)
		}
		seen.Insert(name)
		names[i] = name
	}
	log = log.Named("podconfig")
	return &PodConfig{
		log:     log,
		sources: sources,
		names:   names,
		updates: make(chan PodUpdate, updatesBuffer),
		store:   newStore(log, time.Now, names),
	}, nil
}

// Updates is the stream of pod updates. It is closed when Run returns.
func (c *PodConfig) Updates() <-chan PodUpdate {
	return c.updates
}

// Run runs the sources and merges what they send until ctx ends.
func (c *PodConfig) Run(ctx context.Context) {
	merged := make(chan podsource.Update)
	var wg sync.WaitGroup
	for _, src := range c.sources {
		ch := make(chan podsource.Update)
		wg.Add(2)
		go func() {
			defer wg.Done()
			src.Run(ctx, ch)
		}()
		go func() {
			defer wg.Done()
			forward(ctx, src.Name(), ch, merged)
		}()
	}
	defer func() {
		wg.Wait()
		close(c.updates)
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-merged:
			c.mu.Lock()
			out := c.store.merge(u)
			c.mu.Unlock()
			for _, pu := range out {
				select {
				case c.updates <- pu:
				case <-ctx.Done():
					return
				}
			}
		}
	}
}

// forward passes a source's updates on, stamped with the source's name, so
// a source cannot speak for another.
func forward(ctx context.Context, name string, in <-chan podsource.Update, out chan<- podsource.Update) {
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-in:
			u.Source = name
			select {
			case out <- u:
			case <-ctx.Done():
				return
			}
		}
	}
}

// SeenAllSources reports whether every source has sent its full set and the
// syncLoop has seen an update from each (seen: the sources of the updates it
// received). Until then housekeeping must not treat missing pods as gone.
func (c *PodConfig) SeenAllSources(seen sets.Set[string]) bool {
	if !seen.HasAll(c.names...) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range c.names {
		if !c.store.sources[name].seen {
			return false
		}
	}
	return true
}

// Rejected lists the pods sources offer that the node does not run, with
// the reason, for pod status and events.
func (c *PodConfig) Rejected() []RejectedPod {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.store.rejected()
}
