//go:build linux

package exepages

import (
	"sync"
	"time"
)

// AfterCalls releases the executable's pages once a process that serves
// calls has served none for a while: a plugin whose only steady work is
// the core's health check every 2 s (most of them, most of the time)
// otherwise maps that call's code (TLS, HTTP/2, gRPC's server, protobuf)
// within 2 s of each 10-second release and holds it all the time; released
// after each call, it holds it for the call alone and maps it back at the
// next one, about a hundred minor faults (docs/performance.md, Memory).
// The heap stays with the 10-second releases (ReleaseAfterBursts): a
// collection per call would cost more than the call.
type AfterCalls struct {
	quiet   time.Duration
	release func()

	mu     sync.Mutex
	active int
	timer  *time.Timer
}

// CallQuiet is how long a process serves no call before AfterCalls
// releases: the calls of one burst (a pod start's admission, a cycle's
// calls to a plugin) follow each other within milliseconds.
const CallQuiet = 100 * time.Millisecond

// NewAfterCalls releases with Release, CallQuiet after the last call ends.
// A release that fails is not retried until the next call ends: the
// 10-second releases report the error.
func NewAfterCalls() *AfterCalls {
	return newAfterCalls(CallQuiet, func() { _ = Release() })
}

func newAfterCalls(quiet time.Duration, release func()) *AfterCalls {
	a := &AfterCalls{quiet: quiet, release: release}
	a.timer = time.AfterFunc(time.Hour, a.fire)
	a.timer.Stop()
	return a
}

// Begin marks a call started: no release until it ends.
func (a *AfterCalls) Begin() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.active++
	a.timer.Stop()
}

// End marks a call ended; the last one to end starts the quiet period.
func (a *AfterCalls) End() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.active--
	if a.active == 0 {
		a.timer.Reset(a.quiet)
	}
}

// fire releases unless a call began since the timer was set (Stop cannot
// recall a timer whose function has started).
func (a *AfterCalls) fire() {
	a.mu.Lock()
	idle := a.active == 0
	a.mu.Unlock()
	if idle {
		a.release()
	}
}
