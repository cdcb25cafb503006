package apiclient

import (
	"context"
	"errors"
	"io"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// Outage logs a part's loss of the API server once: a warning at the first
// failed call, a line when a call succeeds again, nothing in between, so a
// minutes-long outage is two lines, not one per retry. It is safe for
// concurrent use.
type Outage struct {
	log     hclog.Logger
	what    string
	failing atomic.Bool
}

// NewOutage makes the outage log of a part: what it does with the API
// server ("watching the node's pods").
func NewOutage(log hclog.Logger, what string) *Outage {
	return &Outage{log: log, what: what}
}

// Observe records a call's result: err nil for a success.
func (o *Outage) Observe(err error) {
	switch {
	case err != nil && o.failing.CompareAndSwap(false, true):
		o.log.Warn("the API server cannot be reached; retrying", "while", o.what, "error", err)
	case err == nil && o.failing.CompareAndSwap(true, false):
		o.log.Info("the API server is reachable again", "while", o.what)
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
