// Package lastresort tears down what tests started when the test binary is
// about to hit its -test.timeout. The testing package ends a binary that
// runs out of time with a panic from a timer goroutine, and no t.Cleanup
// (nor a deferred Close in TestMain) runs: containerds, control planes,
// cores, mounts and temporary directories would stay behind.
//
// Long-lived test resources (internal/devnode's nodes and cgroup roots,
// internal/devcluster's clusters, internal/e2e's processes and temporary
// directories, internal/testregistry's registries) Register their teardown
// when they come up and unregister it when they are closed. Main, called
// from every e2e TestMain, starts a watchdog that fires a margin before the
// timeout: it says so, dumps every goroutine (what the timeout panic would
// have shown), runs the registered teardowns, newest first, each bounded,
// and exits with status 2.
//
// An interrupt (SIGINT, as Ctrl-C on `make test` sends the test binary, or
// SIGTERM) would likewise end the binary at once. Watch catches both: it
// runs the registered teardowns the same way and exits with 128 plus the
// signal's number, as the shell reports a process the signal ended.
//
// A binary killed outright (SIGKILL) runs nothing; StartCommand gives the
// daemons tests start a parent-death signal, so that they die with it.
package lastresort

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ExitCode is the watchdog's exit status, the one a test binary's timeout
// panic ends with.
const ExitCode = 2

// Banner starts the watchdog's first line, for tests and for humans
// searching a log.
const Banner = "lastresort: this test binary is about to time out"

// maxMargin is how long before the timeout the watchdog fires: time for a
// devnode's Close (sandboxes, containerd, shims, mounts) and a control
// plane's. Short timeouts get a quarter of theirs instead.
const maxMargin = time.Minute

// teardown is one registered cleanup.
type teardown struct {
	what string
	fn   func() error
}

var registry struct {
	mu   sync.Mutex
	next uint64
	// byID holds the teardowns by registration order, so the watchdog
	// runs them newest first, as t.Cleanup would.
	byID map[uint64]teardown
}

// Register adds fn, which tears down what names, to what the watchdog
// runs. The owner calls the returned func once it has cleaned up itself;
// calling it again does nothing. fn may run while the owner's own cleanup
// runs, so it must be safe to call twice (every Close here is).
func Register(what string, fn func() error) (unregister func()) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.byID == nil {
		registry.byID = map[uint64]teardown{}
	}
	registry.next++
	id := registry.next
	registry.byID[id] = teardown{what: what, fn: fn}
	return func() {
		registry.mu.Lock()
		defer registry.mu.Unlock()
		delete(registry.byID, id)
	}
}

// pending is every registered teardown, newest first.
func pending() []teardown {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	ids := make([]uint64, 0, len(registry.byID))
	for id := range registry.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]teardown, 0, len(ids))
	for _, id := range slices.Backward(ids) {
		out = append(out, registry.byID[id])
	}
	return out
}

// Main runs m's tests under the watchdog: os.Exit(lastresort.Main(m)).
// A TestMain that does more before m.Run calls Watch right before it.
func Main(m *testing.M) int {
	stop := Watch()
	defer stop()
	return m.Run()
}

// Watch starts the watchdog for the -test.timeout flag (parsing the
// command line if nobody has yet, as m.Run would): it fires Margin before
// the timeout, which m.Run's own alarm counts from about now. With no
// timeout (-timeout 0) there is no timeout to watch. It also tears down on
// SIGINT and SIGTERM. Call the returned stop once m.Run has returned: the
// timeout's alarm and the signal catching end with it, and what TestMain
// closes afterwards is no business of the watchdog's.
func Watch() (stop func()) {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup("test.timeout")
	if f == nil {
		return func() {} // not a test binary
	}
	stopSignals := watchSignals()
	timeout, ok := f.Value.(flag.Getter).Get().(time.Duration)
	if !ok || timeout <= 0 {
		return stopSignals
	}
	margin := Margin(timeout)
	timer := time.AfterFunc(timeout-margin, func() {
		fire(os.Stderr, timeout, margin)
		os.Exit(ExitCode)
	})
	return func() {
		timer.Stop()
		stopSignals()
	}
}

// watchSignals tears down and exits on SIGINT or SIGTERM until stop is
// called. A second signal during the teardown is caught too: the teardown
// is bounded, and a test binary left half torn down is what this prevents.
func watchSignals() (stop func()) {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-signals:
			todo := pending()
			fmt.Fprintf(os.Stderr, "lastresort: %v: tearing down %d resource(s) the tests left running\n", sig, len(todo))
			tearDown(os.Stderr, todo, time.Now().Add(maxMargin), maxMargin/2)
			code := 128 + int(sig.(syscall.Signal))
			fmt.Fprintf(os.Stderr, "lastresort: exiting with status %d\n", code)
			os.Exit(code)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(signals)
		close(done)
	}
}

// Margin is how long before a timeout the watchdog fires.
func Margin(timeout time.Duration) time.Duration {
	return min(maxMargin, timeout/4)
}

// fire reports the coming timeout, dumps every goroutine and runs the
// registered teardowns within the margin, each for at most half of it.
func fire(w io.Writer, timeout, margin time.Duration) {
	// Leave the last tenth of the margin for the report and the exit.
	deadline := time.Now().Add(margin * 9 / 10)
	todo := pending()
	fmt.Fprintf(w, "%s (-test.timeout=%v, %v from now): dumping every goroutine, then tearing down %d resource(s) its tests left running\n\n",
		Banner, timeout, margin, len(todo))
	w.Write(allStacks())
	fmt.Fprintln(w)
	if tearDown(w, todo, deadline, margin/2) {
		fmt.Fprintf(w, "lastresort: exiting with status %d before the timeout\n", ExitCode)
	}
}

// tearDown runs todo in order until deadline, each for at most bound, and
// says how each went; false means it ran out of time.
func tearDown(w io.Writer, todo []teardown, deadline time.Time, bound time.Duration) bool {
	for i, td := range todo {
		left := time.Until(deadline)
		if left <= 0 {
			for _, skipped := range todo[i:] {
				fmt.Fprintf(w, "lastresort: out of time, not torn down: %s\n", skipped.what)
			}
			return false
		}
		// One teardown that hangs must not take the others' time.
		each := min(left, bound)
		start := time.Now()
		done, err := run(td.fn, each)
		switch {
		case !done:
			fmt.Fprintf(w, "lastresort: %s: teardown still running after %v, going on\n", td.what, each.Round(time.Millisecond))
		case err != nil:
			fmt.Fprintf(w, "lastresort: %s: teardown failed after %v: %v\n", td.what, time.Since(start).Round(time.Millisecond), err)
		default:
			fmt.Fprintf(w, "lastresort: tore down %s (%v)\n", td.what, time.Since(start).Round(time.Millisecond))
		}
	}
	return true
}

// run runs fn, waiting for it at most bound; a panic in fn is an error,
// so that one broken teardown does not stop the rest.
func run(fn func() error, bound time.Duration) (done bool, err error) {
	errc := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				errc <- fmt.Errorf("panic: %v", p)
			}
		}()
		errc <- fn()
	}()
	select {
	case err := <-errc:
		return true, err
	case <-time.After(bound):
		return false, nil
	}
}

// allStacks is every goroutine's stack, as a panic with GOTRACEBACK=all
// prints them.
func allStacks() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}
