package sdktest

import (
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// newTestLogger logs to t.Log until the test ends. Lines a plugin logs
// after that (from goroutines still winding down) are dropped: t.Log after
// a test has completed panics.
func newTestLogger(t testing.TB, name string) hclog.Logger {
	w := &testLogWriter{t: t}
	t.Cleanup(w.stop)
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Debug, Output: w})
}

type testLogWriter struct {
	mu      sync.Mutex
	t       testing.TB
	stopped bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testLogWriter) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
}
