//go:build e2e

package pluginhoste2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/internal/e2e"
)

func TestLaunchedProcessIsIsolated(t *testing.T) {
	t.Setenv("MICROLET_TEST_HOST_SECRET", "must-not-leak")
	spec := evictionAlpha
	spec.Env = map[string]string{"TEST_GREETING": "hello"}
	host, dir := serving(t, pluginhost.Options{}, spec)
	pid := mustStatus(t, host, "eviction", "alpha").PID

	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	if argv0 := string(bytes.Split(cmdline, []byte{0})[0]); argv0 != "microlet-eviction-alpha" {
		t.Errorf("argv[0] = %q, want the binary's name", argv0)
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "microlet-eviction-alpha"); exe != want {
		t.Errorf("executable = %q, want %q", exe, want)
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("process group = %d (%v), want its own group %d", pgid, err, pid)
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(string(environ), "\x00")
	for _, want := range []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "TEST_GREETING=hello", "MICROLET_PLUGIN_KIND=eviction", "MICROLET_PLUGIN_NAME=alpha", "MICROLET_PLUGIN_LOG_LEVEL=info"} {
		if !slices.Contains(env, want) {
			t.Errorf("plugin environment lacks %q: %q", want, env)
		}
	}
	if slices.Contains(env, "MICROLET_TEST_HOST_SECRET=must-not-leak") {
		t.Errorf("the host's environment leaked into the plugin: %q", env)
	}
}

func TestPluginStderrReachesLogger(t *testing.T) {
	var out e2e.SyncBuffer
	logger := hclog.New(&hclog.LoggerOptions{Name: "core", Level: hclog.Info, Output: &out})
	serving(t, pluginhost.Options{Logger: logger, NodeName: "node-a", HostService: fakeHostService{node: "node-a"}}, evictionAlpha)

	for _, want := range []string{"core.plugin.eviction.alpha: configured:", "core.plugin.eviction.alpha: host service answered: node=node-a"} {
		Eventually(t, 5*time.Second, fmt.Sprintf("the log has %q:\n%s", want, out.String()),
			func() bool { return strings.Contains(out.String(), want) })
	}
}

func TestRejectedConfig(t *testing.T) {
	dir := PluginDir(t)
	Install(t, bins.Plugin, dir, "microlet-eviction-alpha")
	host := NewHost(t, dir, pluginhost.Options{})
	ctx := context.Background()

	// want holds each finding's path and the start of its message: the
	// SDK may add hints.
	tests := []struct {
		config map[string]any
		want   []pluginhost.ConfigError
	}{
		{map[string]any{"threshold": 2}, nil},
		{map[string]any{"threshold": -1}, []pluginhost.ConfigError{{Path: "threshold", Message: "must be a positive whole number, got -1"}}},
		{map[string]any{"treshold": 2}, []pluginhost.ConfigError{{Path: "treshold", Message: "unknown key"}}},
	}
	for _, tt := range tests {
		spec := evictionAlpha
		spec.Config = tt.config
		got, err := host.Validate(ctx, spec)
		if err != nil {
			t.Fatalf("Validate(%v): %v", tt.config, err)
		}
		matches := slices.EqualFunc(got, tt.want, func(g, w pluginhost.ConfigError) bool {
			return g.Path == w.Path && strings.HasPrefix(g.Message, w.Message)
		})
		if !matches {
			t.Errorf("Validate(%v) = %+v, want %+v", tt.config, got, tt.want)
		}
	}

	spec := evictionAlpha
	spec.Config = map[string]any{"threshold": -1}
	err := host.Reconcile(ctx, []pluginhost.Spec{spec})
	var invalid *pluginhost.InvalidConfigError
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), "threshold: must be a positive whole number, got -1") {
		t.Errorf("Reconcile with a rejected config: %v, want the plugin's message", err)
	}
	if st := mustStatus(t, host, "eviction", "alpha"); st.State != pluginhost.Failed {
		t.Errorf("status %+v, want failed", st)
	}
}

func TestIdentityMismatchIsRefused(t *testing.T) {
	spec := evictionAlpha
	spec.Args = []string{"-claim-name=impostor"}
	dir := PluginDir(t)
	Install(t, bins.Plugin, dir, spec.BinaryName())
	host := NewHost(t, dir, pluginhost.Options{})
	err := host.Reconcile(context.Background(), []pluginhost.Spec{spec})
	for _, want := range []string{"says it is plugin eviction/impostor", "expects eviction/alpha"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to mention %q", err, want)
		}
	}
}
