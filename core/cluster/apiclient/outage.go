package apiclient

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// Outages logs the node's loss of the API server once, whichever of its
// parts (watching pods, writing statuses, posting the Node, ...) notices
// first: a warning when the first part's call fails, a line when every part
// that failed has succeeded again, nothing in between. A minutes-long outage
// is two lines, not one per part or per retry. It is safe for concurrent use.
type Outages struct {
	log hclog.Logger

	mu      sync.Mutex
	failing map[string]bool // the parts whose last call failed
	since   time.Time
}

// NewOutages makes the node's outage log.
func NewOutages(log hclog.Logger) *Outages {
	return &Outages{log: log, failing: map[string]bool{}}
}

// Part is the outage log of one part: what it does with the API server
// ("watching the node's pods").
func (o *Outages) Part(what string) *Outage {
	return &Outage{all: o, what: what}
}

func (o *Outages) failed(what string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	first := len(o.failing) == 0
	o.failing[what] = true
	if !first {
		o.log.Debug("the API server cannot be reached", "while", what, "error", err)
		return
	}
	o.since = time.Now()
	o.log.Warn("the API server cannot be reached; retrying", "while", what, "error", err)
}

func (o *Outages) recovered(what string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.failing, what)
	if len(o.failing) > 0 {
		waiting := make([]string, 0, len(o.failing))
		for part := range o.failing {
			waiting = append(waiting, part)
		}
		slices.Sort(waiting)
		o.log.Debug("the API server answers again", "while", what, "still_failing", waiting)
		return
	}
	o.log.Info("the API server is reachable again", "outage", time.Since(o.since).Round(time.Millisecond).String())
}

// Outage is one part's view of the API server's reachability; it reports
// to the node's Outages.
type Outage struct {
	all     *Outages
	what    string
	failing atomic.Bool
}

// NewOutage is the outage log of a part that reports on its own, for
// tests; an agent's parts share its Outages.
func NewOutage(log hclog.Logger, what string) *Outage {
	return NewOutages(log).Part(what)
}

// Observe records a call's result: err nil for a success. A nil Outage
// records nothing.
func (o *Outage) Observe(err error) {
	switch {
	case o == nil:
	case err != nil && o.failing.CompareAndSwap(false, true):
		o.all.failed(o.what, err)
	case err == nil && o.failing.CompareAndSwap(true, false):
		o.all.recovered(o.what)
	}
}

// Failing reports whether the last call failed.
func (o *Outage) Failing() bool { return o.failing.Load() }

// WatchErrorHandler is an informer's watch error handler that reports to
// o instead of klog; a watch that ends normally (closed, or its resource
// version expired) is no outage.
func (o *Outage) WatchErrorHandler(_ context.Context, _ *cache.Reflector, err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return
	}
	o.Observe(err)
}
