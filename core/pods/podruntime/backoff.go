package podruntime

import (
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Backoff defaults, by the kubelet's names (pkg/kubelet/kubelet.go and
// pkg/kubelet/apis/config/v1beta1/defaults.go).
const (
	containerBackOffPeriod = 10 * time.Second
	maxContainerBackOff    = 300 * time.Second
	imageBackOffPeriod     = 10 * time.Second
	maxImageBackOff        = 300 * time.Second
	// backOffResetAfter is how long an item must go without a new failure
	// for its backoff to start over at the initial period: the kubelet's
	// crash-loop HasExpiredFunc (600 s), which for images is the default
	// expiry, twice maxImageBackOff.
	backOffResetAfter = 600 * time.Second
)

// backoff is client-go's flowcontrol.Backoff without jitter, which is what
// the kubelet uses for crash loops and image pulls; microlet keeps its own
// to avoid client-go in the core and to take a plain clock function.
//
// The rule: each item (a pod's container, or a pod's image) has a delay,
// starting at initial and doubling on every failure up to max. An item
// whose last failure is more than backOffResetAfter before the current
// event starts over at initial: a container that ran 10 minutes before it
// crashed again is restarted after 10 s, not 300 s.
type backoff struct {
	initial, max time.Duration
	now          func() time.Time

	mu      sync.Mutex
	entries map[string]*backoffEntry
}

type backoffEntry struct {
	delay      time.Duration
	lastUpdate time.Time
}

func newBackoff(initial, max time.Duration, now func() time.Time) *backoff {
	return &backoff{initial: initial, max: max, now: now, entries: map[string]*backoffEntry{}}
}

// next records a failure of id at eventTime: the delay doubles, or starts
// at initial when id is new or its entry expired.
func (b *backoff) next(id string, eventTime time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[id]
	if !ok || expired(eventTime, e.lastUpdate) {
		e = &backoffEntry{delay: b.initial}
		b.entries[id] = e
	} else {
		e.delay = min(2*e.delay, b.max)
	}
	e.lastUpdate = b.now()
}

// inBackOffSince reports whether id must still wait after a failure at
// eventTime (the time the container finished): now is within the delay.
func (b *backoff) inBackOffSince(id string, eventTime time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[id]
	if !ok || expired(eventTime, e.lastUpdate) {
		return false
	}
	return b.now().Sub(eventTime) < e.delay
}

// inBackOffSinceUpdate reports whether id must still wait: now is within the
// delay of the last recorded failure.
func (b *backoff) inBackOffSinceUpdate(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[id]
	now := b.now()
	if !ok || expired(now, e.lastUpdate) {
		return false
	}
	return now.Sub(e.lastUpdate) < e.delay
}

// delay is id's current delay, 0 when it has none.
func (b *backoff) delay(id string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.entries[id]; ok {
		return e.delay
	}
	return 0
}

// gc forgets the entries that expired, so pods that are gone leave nothing.
func (b *backoff) gc() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	for id, e := range b.entries {
		if expired(now, e.lastUpdate) {
			delete(b.entries, id)
		}
	}
}

func expired(eventTime, lastUpdate time.Time) bool {
	return eventTime.Sub(lastUpdate) > backOffResetAfter
}

// forgetPod drops the entries of a pod, whose keys start with its UID.
func (b *backoff) forgetPod(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	prefix := string(uid) + "_"
	for id := range b.entries {
		if strings.HasPrefix(id, prefix) {
			delete(b.entries, id)
		}
	}
}
