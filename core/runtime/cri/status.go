package cri

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultStatusPollInterval is how often the kubelet's updateRuntimeUp asks
// the runtime for its status.
const DefaultStatusPollInterval = 5 * time.Second

// Condition is one of the runtime's conditions.
type Condition struct {
	Type    string
	Status  bool
	Reason  string
	Message string
}

// String renders the condition as the kubelet does in its node condition
// messages: "NetworkReady=false reason:NetworkPluginNotReady message:...".
func (c Condition) String() string {
	return fmt.Sprintf("%s=%t reason:%s message:%s", c.Type, c.Status, c.Reason, c.Message)
}

// RuntimeHealth is what the last status poll found.
type RuntimeHealth struct {
	RuntimeReady Condition
	NetworkReady Condition
	// Err is why the last poll failed; the conditions are then those of the
	// last successful poll.
	Err error
	// CheckedAt is when the last poll ended; zero before the first.
	CheckedAt time.Time
	// Handlers and Features are what the runtime said it supports at the
	// last successful poll (nil from a runtime older than CRI 1.30, such
	// as containerd 1.6: it supports neither user namespaces nor
	// supplementalGroupsPolicy).
	Handlers []*runtimeapi.RuntimeHandler
	Features *runtimeapi.RuntimeFeatures
}

// SupportsUserNamespaces reports whether the runtime handler runs pods in
// user namespaces, as the kubelet's HandlerSupportsUserNamespaces: a
// runtime that lists no handlers does not.
func (h RuntimeHealth) SupportsUserNamespaces(handler string) bool {
	for _, rh := range h.Handlers {
		if rh.GetName() == handler {
			return rh.GetFeatures().GetUserNamespaces()
		}
	}
	return false
}

// SupportsSupplementalGroupsPolicy reports whether the runtime honours a
// pod's supplementalGroupsPolicy (the Node's status.features).
func (h RuntimeHealth) SupportsSupplementalGroupsPolicy() bool {
	return h.Features.GetSupplementalGroupsPolicy()
}

// RuntimeErr says why pods cannot run at all, in the kubelet's words, or
// nil when they can.
func (h RuntimeHealth) RuntimeErr() error {
	switch {
	case h.CheckedAt.IsZero():
		return errors.New("container runtime status check may not have completed yet")
	case h.Err != nil:
		return fmt.Errorf("container runtime is down: %w", h.Err)
	case !h.RuntimeReady.Status:
		return fmt.Errorf("container runtime not ready: %s", h.RuntimeReady)
	}
	return nil
}

// NetworkErr says why pods outside the host network cannot run, in the
// kubelet's words, or nil when they can.
func (h RuntimeHealth) NetworkErr() error {
	if !h.CheckedAt.IsZero() && h.Err == nil && !h.NetworkReady.Status {
		return fmt.Errorf("container runtime network not ready: %s", h.NetworkReady)
	}
	return nil
}

func (h RuntimeHealth) sameAs(o RuntimeHealth) bool {
	return h.RuntimeReady == o.RuntimeReady && h.NetworkReady == o.NetworkReady &&
		(h.Err == nil) == (o.Err == nil) && (h.Err == nil || h.Err.Error() == o.Err.Error()) &&
		h.CheckedAt.IsZero() == o.CheckedAt.IsZero()
}

// StatusPoller asks the runtime for its conditions every interval, as the
// kubelet's updateRuntimeUp does, and tells watchers when they change.
type StatusPoller struct {
	client   *Client
	interval time.Duration
	log      hclog.Logger

	mu      sync.Mutex
	health  RuntimeHealth
	changed chan struct{}
}

// NewStatusPoller makes a poller; interval 0 means DefaultStatusPollInterval.
func NewStatusPoller(client *Client, interval time.Duration) *StatusPoller {
	if interval == 0 {
		interval = DefaultStatusPollInterval
	}
	return &StatusPoller{client: client, interval: interval, log: client.log, changed: make(chan struct{})}
}

// Health returns what the last poll found and a channel that is closed when
// that changes: read the health, act on it, wait on the channel, repeat.
func (p *StatusPoller) Health() (RuntimeHealth, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.health, p.changed
}

// Run polls at once and then every interval until ctx ends.
func (p *StatusPoller) Run(ctx context.Context) {
	ticker := time.NewTicker(p.interval)
	defer ticker.Stop()
	for {
		p.poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (p *StatusPoller) poll(ctx context.Context) {
	resp, err := p.client.Status(ctx, false)
	if ended(ctx) {
		return // shutting down: not a runtime failure
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	next := p.health
	next.CheckedAt = time.Now()
	next.Err = err
	if err == nil {
		next.RuntimeReady = findCondition(resp, runtimeapi.RuntimeReady)
		next.NetworkReady = findCondition(resp, runtimeapi.NetworkReady)
		next.Handlers, next.Features = resp.GetRuntimeHandlers(), resp.GetFeatures()
	}
	if next.sameAs(p.health) {
		p.health = next
		return
	}
	p.logChange(next)
	p.health = next
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *StatusPoller) logChange(next RuntimeHealth) {
	if err := next.RuntimeErr(); err != nil {
		p.log.Error("container runtime cannot run pods", "error", err)
		return
	}
	if err := next.NetworkErr(); err != nil {
		p.log.Warn("container runtime cannot run pods outside the host network", "error", err)
		return
	}
	p.log.Info("container runtime is ready")
}

// ended reports whether ctx is over. A call can fail on ctx's deadline a
// moment before ctx.Err reports it, so the deadline is checked too.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}

// findCondition returns a condition of the status; a runtime that does not
// report it counts as not ready, as in the kubelet.
func findCondition(resp *runtimeapi.StatusResponse, conditionType string) Condition {
	for _, c := range resp.GetStatus().GetConditions() {
		if c.Type == conditionType {
			return Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}
		}
	}
	return Condition{Type: conditionType, Reason: "ConditionMissing", Message: "the runtime did not report this condition"}
}
