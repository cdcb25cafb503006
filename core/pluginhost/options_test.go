package pluginhost

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/internal/prereq"
)

func TestOptionsDefaults(t *testing.T) {
	o, err := Options{Dir: "/plugins", SocketDir: "/run/sockets"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		StartTimeout: 10 * time.Second, CallTimeout: 2 * time.Second,
		HealthInterval: 10 * time.Second, HealthTimeout: time.Second, HealthFailures: 2,
		RestartBackoff: 100 * time.Millisecond, RestartBackoffMax: 30 * time.Second,
		RestartBudget: 5, RestartWindow: 10 * time.Minute, DrainTimeout: 5 * time.Second,
	}
	got := o
	got.Dir, got.SocketDir, got.Logger, got.LogLevel = "", "", nil, ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
	if o.Logger == nil || o.LogLevel != "off" {
		t.Errorf("logger %v, level %q: want a null logger, and plugins told to log nothing", o.Logger, o.LogLevel)
	}
}

func TestOptionsRefused(t *testing.T) {
	tests := []struct {
		opts Options
		want []string
	}{
		{Options{Dir: "plugins", SocketDir: "/s"}, []string{`plugin directory "plugins": expected an absolute path`}},
		{Options{Dir: "/p", SocketDir: ""}, []string{`plugin socket directory "": expected an absolute path`}},
		{Options{Dir: "/p", SocketDir: "/s", LogLevel: "loud"}, []string{`plugin log level "loud"`}},
		{Options{Dir: "/p", SocketDir: "/s", CallTimeout: -time.Second, RestartBudget: -1}, []string{"CallTimeout -1s", "RestartBudget -1"}},
		{Options{Dir: "/p", SocketDir: "/s", RestartBackoff: time.Minute, RestartBackoffMax: time.Second}, []string{"RestartBackoffMax 1s is below RestartBackoff 1m0s"}},
	}
	for _, tt := range tests {
		_, err := tt.opts.withDefaults()
		for _, want := range tt.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%+v: error %v, want it to mention %q", tt.opts, err, want)
			}
		}
	}
}

func TestOptionsLogLevelFromLogger(t *testing.T) {
	o, err := Options{Dir: "/p", SocketDir: "/s", Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Debug})}.withDefaults()
	if err != nil || o.LogLevel != "debug" {
		t.Errorf("level %q, %v; want the logger's, debug", o.LogLevel, err)
	}
}

func TestPrepareSocketDir(t *testing.T) {
	parent := t.TempDir()
	created := filepath.Join(parent, "a", "sockets")
	if err := prepareSocketDir(created); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(created); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("created %v (%v), want mode 0700", info.Mode(), err)
	}
	stale := filepath.Join(created, "plugin-dir1234")
	other := filepath.Join(created, "keep")
	for _, dir := range []string{stale, other} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := prepareSocketDir(created); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a stale plugin socket directory was kept (%v)", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("something else in the socket directory was removed: %v", err)
	}

	open := filepath.Join(parent, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := prepareSocketDir(open); err == nil || !strings.Contains(err.Error(), "has mode 0755; expected 0700") {
		t.Errorf("a 0755 socket directory: error %v, want a refusal", err)
	}

	file := filepath.Join(parent, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := prepareSocketDir(file); err == nil {
		t.Error("a file as socket directory was accepted")
	}
}

// TestPrepareSocketDirOwnedByAnother: a 0700 directory another user owns
// is that user's way into the plugins' sockets.
func TestPrepareSocketDirOwnedByAnother(t *testing.T) {
	prereq.Root(t, "chown a directory to another user")
	foreign := filepath.Join(t.TempDir(), "foreign")
	if err := os.Mkdir(foreign, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(foreign, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := prepareSocketDir(foreign); err == nil || !strings.Contains(err.Error(), "is owned by uid 65534; expected the core's, 0") {
		t.Errorf("a socket directory of uid 65534: error %v, want a refusal", err)
	}
}
