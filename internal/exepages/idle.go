//go:build linux

package exepages

import (
	"sync"
	"time"
)

// AfterCalls releases the executable's pages once a process that serves
// calls has served none for a while. A plugin's steady work is the core's
// calls: its health check every 10 s and, for some, a cycle's calls every
// 10 s. Each maps that call's code (HTTP/2, gRPC's server, protobuf, the
// plugin's own), 1 to 8 MB with the kernel's fault-around, and with
// the 10-second releases alone (ReleaseAfterBursts) a plugin held it until
// its next release: for a moment or for most of the 10 s, depending on
// where the core's timers fell against the plugin's, which differs from
// one start to the next. In a cluster that was the 10 MB between the
// cluster benchmark's low and high runs (docs/performance.md, Memory).
// Released after each call, it holds it for the call alone and maps it
// back at the next, about a hundred minor faults. The heap stays with the
// 10-second releases: a collection per call would cost more than the call.
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
