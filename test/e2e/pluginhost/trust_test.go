//go:build e2e

package pluginhoste2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/microlet/microlet/core/pluginhost"
)

func TestSHA256Pin(t *testing.T) {
	dir := PluginDir(t)
	Install(t, bins.Plugin, dir, "microlet-eviction-alpha")
	host := NewHost(t, dir, pluginhost.Options{})
	content, err := os.ReadFile(filepath.Join(dir, "microlet-eviction-alpha"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	right := hex.EncodeToString(sum[:])
	wrong := strings.Repeat("0", 64)

	spec := evictionAlpha
	spec.SHA256 = wrong
	err = host.Reconcile(context.Background(), []pluginhost.Spec{spec})
	for _, want := range []string{filepath.Join(dir, "microlet-eviction-alpha"), "sha256 " + right, "pins " + wrong} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("wrong pin: error %v, want it to mention %q", err, want)
		}
	}
	if _, err := GetIdentity(context.Background(), host.Plugin("eviction")); !errors.Is(err, pluginhost.ErrUnavailable) {
		t.Errorf("call to a refused plugin: %v, want ErrUnavailable", err)
	}

	spec.SHA256 = strings.ToUpper(right)
	if err := host.Reconcile(context.Background(), []pluginhost.Spec{spec}); err != nil {
		t.Fatalf("right pin refused: %v", err)
	}
	if st := mustStatus(t, host, "eviction", "alpha"); st.State != pluginhost.Serving {
		t.Errorf("with the right pin: %+v, want serving", st)
	}
}

func TestUnsafePluginFilesAreRefused(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(dir, binary string) error
		path    func(dir, binary string) string
	}{
		{
			name:    "world-writable plugin dir",
			prepare: func(dir, _ string) error { return os.Chmod(dir, 0o777) },
			path:    func(dir, _ string) string { return "plugin directory " + dir },
		},
		{
			name:    "group-writable binary",
			prepare: func(_, binary string) error { return os.Chmod(binary, 0o775) },
			path:    func(_, binary string) string { return "plugin binary " + binary },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := PluginDir(t)
			Install(t, bins.Plugin, dir, "microlet-eviction-alpha")
			binary := filepath.Join(dir, "microlet-eviction-alpha")
			if err := tt.prepare(dir, binary); err != nil {
				t.Fatal(err)
			}
			host := NewHost(t, dir, pluginhost.Options{})
			err := host.Reconcile(context.Background(), []pluginhost.Spec{evictionAlpha})
			for _, want := range []string{tt.path(dir, binary), "writable by group or others"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want it to mention %q", err, want)
				}
			}
			if st := mustStatus(t, host, "eviction", "alpha"); st.State != pluginhost.Failed || st.PID != 0 {
				t.Errorf("status %+v, want failed without a process", st)
			}
		})
	}
}

// TestUnsafePluginDirPlacesAreRefused: a plugin directory reached through a
// symlink, or inside a directory anyone may write without the sticky bit,
// is refused like a writable one: whoever may write there can put another
// directory in its place.
func TestUnsafePluginDirPlacesAreRefused(t *testing.T) {
	tests := []struct {
		name  string
		place func(t *testing.T) string // the plugin_dir, with the plugin installed
		want  string
	}{
		{
			name: "symlink",
			place: func(t *testing.T) string {
				real := PluginDir(t)
				Install(t, bins.Plugin, real, evictionAlpha.BinaryName())
				link := filepath.Join(PluginDir(t), "plugins")
				if err := os.Symlink(real, link); err != nil {
					t.Fatal(err)
				}
				return link
			},
			want: "is a symlink",
		},
		{
			name: "world-writable parent",
			place: func(t *testing.T) string {
				parent := PluginDir(t)
				dir := filepath.Join(parent, "plugins")
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				Install(t, bins.Plugin, dir, evictionAlpha.BinaryName())
				if err := os.Chmod(parent, 0o777); err != nil {
					t.Fatal(err)
				}
				return dir
			},
			want: "which anyone may write",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := NewHost(t, tt.place(t), pluginhost.Options{})
			err := host.Reconcile(context.Background(), []pluginhost.Spec{evictionAlpha})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Reconcile: %v, want a refusal saying %q", err, tt.want)
			}
			if st := mustStatus(t, host, "eviction", "alpha"); st.State != pluginhost.Failed || st.PID != 0 {
				t.Errorf("status %+v, want failed without a process", st)
			}
		})
	}
}
