package podsource

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
)

// logBuffer collects log lines for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// count returns how many lines contain all of the substrings.
func (b *logBuffer) count(substrings ...string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, line := range strings.Split(b.buf.String(), "\n") {
		all := true
		for _, s := range substrings {
			all = all && strings.Contains(line, s)
		}
		if all {
			n++
		}
	}
	return n
}

func testLogger(buf *logBuffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Debug})
}

// next waits for the next update.
func next(t *testing.T, ch <-chan Update) Update {
	t.Helper()
	select {
	case u := <-ch:
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("no update within 30s")
		return Update{}
	}
}

// eventually waits for cond, failing the test after 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 30s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// names renders pods as "ns/name" in order.
func names(pods []*v1.Pod) string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Namespace + "/" + p.Name
	}
	return strings.Join(out, ",")
}

func manifest(name, image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n  containers:\n  - name: c\n    image: " + image + "\n"
}
