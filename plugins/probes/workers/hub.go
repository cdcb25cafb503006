package workers

import (
	"context"
	"maps"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// watchBuffer is how many results a watch holds for its stream before the
// workers publishing to it wait, as upstream's probe workers wait on a
// full results channel.
const watchBuffer = 64

// resultKey names one probe of one container instance.
type resultKey struct {
	containerID string
	kind        probesv1.ProbeType
}

// hub hands every attempt's result to every open watch, and keeps each
// probe's standing verdict for watches opened later. A watch opened after
// results were published (the core reopens its stream after a break, or
// opens it just after SyncProbes started the workers) so still learns
// every verdict, exactly once, without counting an attempt twice.
type hub struct {
	mu       sync.Mutex
	standing map[resultKey]*probesv1.ProbeResult
	watches  map[*watch]struct{}
}

type watch struct {
	results chan *probesv1.ProbeResult
	done    <-chan struct{}
}

func newHub() *hub {
	return &hub{standing: map[resultKey]*probesv1.ProbeResult{}, watches: map[*watch]struct{}{}}
}

// publish hands r to every open watch, waiting while one is full, until
// it takes r, closes, or ctx (the publishing worker's) ends.
func (h *hub) publish(ctx context.Context, r *probesv1.ProbeResult) {
	h.mu.Lock()
	if r.GetResult() != probesv1.Result_RESULT_UNSPECIFIED {
		h.standing[resultKey{containerID: r.GetContainerId(), kind: r.GetProbeType()}] = restatement(r)
	}
	watches := slices.Collect(maps.Keys(h.watches))
	h.mu.Unlock()
	for _, w := range watches {
		select {
		case w.results <- r:
		case <-w.done:
		case <-ctx.Done():
			return
		}
	}
}

// forget drops the standing verdict of a probe that no longer runs.
func (h *hub) forget(k resultKey) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.standing, k)
}

// watch sends the standing verdicts, then every published result, until
// ctx ends or send fails.
func (h *hub) watch(ctx context.Context, send func(*probesv1.ProbeResult) error) error {
	w := &watch{results: make(chan *probesv1.ProbeResult, watchBuffer), done: ctx.Done()}
	h.mu.Lock()
	standing := slices.Collect(maps.Values(h.standing))
	h.watches[w] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.watches, w)
		h.mu.Unlock()
	}()

	for _, r := range standing {
		if err := send(r); err != nil {
			return err
		}
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case r := <-w.results:
			if err := send(r); err != nil {
				return err
			}
		}
	}
}

// restatement is r as a standing verdict: not an attempt (attempt
// RESULT_UNSPECIFIED, no duration), so the core counts no attempt for it.
func restatement(r *probesv1.ProbeResult) *probesv1.ProbeResult {
	s := proto.CloneOf(r)
	s.Attempt = probesv1.Result_RESULT_UNSPECIFIED
	s.Duration = nil
	return s
}
