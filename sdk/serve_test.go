package sdk_test

import (
	"bytes"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	"github.com/microlet/microlet/sdk/sdktest"
	"github.com/microlet/microlet/sdk/transport"
)

// lockedBuffer collects a plugin's standard error, which go-plugin copies
// from a goroutine of its own.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestStdoutBeforeTheHandshake launches a real plugin binary that prints to
// standard output in init and main: it still handshakes, and what it
// printed lands in its log instead.
func TestStdoutBeforeTheHandshake(t *testing.T) {
	binary := sdktest.Build(t, "./internal/testplugins/noisy")
	var stderr lockedBuffer
	// Registered before Subprocess, so it runs after the plugin is killed
	// and go-plugin has drained its standard error.
	t.Cleanup(func() {
		for _, line := range []string{"noisy: printed in init", "noisy: printed in main"} {
			if !strings.Contains(stderr.String(), line) {
				t.Errorf("%q did not reach the plugin's standard error:\n%s", line, stderr.String())
			}
		}
	})
	h := sdktest.Subprocess(t, binary, sdktest.WithStderr(&stderr))
	if id := h.Identity(); id.GetName() != "noisy" {
		t.Fatalf("GetIdentity = %v", id)
	}
	mustConfigure(t, h)
	resp, err := h.Eviction().Synchronize(t.Context(), &evictionv1.SynchronizeRequest{})
	if err != nil || string(resp.GetState()) != "served" {
		t.Fatalf("Synchronize after printing in Configure = %v, %v", resp, err)
	}
}

// TestStdoutWithoutTheGuard is the control: the same printing without the
// SDK breaks the handshake.
func TestStdoutWithoutTheGuard(t *testing.T) {
	binary := sdktest.Build(t, "./internal/testplugins/unguarded")
	client := plugin.NewClient(transport.ClientConfig(exec.Command(binary), t.TempDir(), hclog.NewNullLogger()))
	t.Cleanup(client.Kill)
	_, err := client.Client()
	if err == nil || !strings.Contains(err.Error(), "Unrecognized remote plugin message: unguarded: printed in init") {
		t.Fatalf("launching a plugin that prints before the handshake without the SDK: %v; want the handshake to fail", err)
	}
}
