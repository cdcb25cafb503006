//go:build e2e

package pluginhoste2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/microlet/microlet/core/pluginhost"
)

// TestRefusedPluginRecoversOnItsOwn: a plugin refused for a cause the
// operator fixes (the directory's or the binary's mode) is failed at once
// and serves again once the cause is fixed, without a reload: at once when
// the plugin directory is watched, after RestartBackoffMax when it is not.
func TestRefusedPluginRecoversOnItsOwn(t *testing.T) {
	tests := []struct {
		name          string
		watch         bool
		retry         time.Duration
		break_, fix   func(dir, binary string) error
		refusalSaying string
	}{
		{
			name: "directory fixed, watched", watch: true, retry: time.Hour,
			break_:        func(dir, _ string) error { return os.Chmod(dir, 0o777) },
			fix:           func(dir, _ string) error { return os.Chmod(dir, 0o755) },
			refusalSaying: "writable by group or others",
		},
		{
			name: "binary fixed, not watched", retry: 500 * time.Millisecond,
			break_:        func(_, binary string) error { return os.Chmod(binary, 0o644) },
			fix:           func(_, binary string) error { return os.Chmod(binary, 0o755) },
			refusalSaying: "not executable",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := PluginDir(t)
			Install(t, bins.Plugin, dir, evictionAlpha.BinaryName())
			binary := filepath.Join(dir, evictionAlpha.BinaryName())
			if err := tt.break_(dir, binary); err != nil {
				t.Fatal(err)
			}
			host := NewHost(t, dir, pluginhost.Options{WatchDir: tt.watch, RestartBackoffMax: tt.retry})
			if err := host.Reconcile(context.Background(), []pluginhost.Spec{evictionAlpha}); err == nil || !strings.Contains(err.Error(), tt.refusalSaying) {
				t.Fatalf("Reconcile: %v, want a refusal saying %q", err, tt.refusalSaying)
			}
			slot := host.Plugin("eviction")
			if st := slot.Status(); st.State != pluginhost.Failed {
				t.Fatalf("refused slot: %+v, want failed", st)
			}
			if err := tt.fix(dir, binary); err != nil {
				t.Fatal(err)
			}
			Eventually(t, 15*time.Second, "the fixed plugin serves", func() bool { return slot.State() == pluginhost.Serving })
			if st := slot.Status(); st.LastError != "" {
				t.Errorf("a plugin serving after a fresh start keeps a stale error: %q", st.LastError)
			}
		})
	}
}

// TestWritablePluginDirIsReportedAtOnce: a plugin directory made
// group-writable under a serving plugin is reported when it happens, not
// at the plugin's next start; the plugin keeps serving.
func TestWritablePluginDirIsReportedAtOnce(t *testing.T) {
	host, dir := serving(t, pluginhost.Options{WatchDir: true}, evictionAlpha)
	slot := host.Plugin("eviction")
	if err := os.Chmod(dir, 0o775); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 10*time.Second, "the writable directory is reported", func() bool {
		return strings.Contains(slot.Status().LastError, "writable by group or others")
	})
	if st := slot.Status(); st.State != pluginhost.Serving {
		t.Errorf("the serving plugin was stopped: %+v", st)
	}
}
