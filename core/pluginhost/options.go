package pluginhost

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
)

// Options configure a Host. Zero durations and counts take the defaults
// noted on each field.
type Options struct {
	// Dir is the plugin directory: binaries named microlet-<kind>-<name>.
	Dir string
	// SocketDir holds the plugins' unix sockets (go-plugin's
	// UnixSocketConfig.TempDir). It is created 0700 if missing, refused if
	// group or others may enter it or another user owns it, and cleared of
	// what a killed core left.
	SocketDir string
	// Logger receives the host's lines and each plugin's stderr, named
	// plugin.<kind>.<name>. Nil discards.
	Logger hclog.Logger
	// LogLevel is passed to plugins (transport.EnvLogLevel and
	// ConfigureRequest.log_level) so they do not ship lines the core drops.
	// Empty: Logger's level.
	LogLevel string
	// NodeName is passed to plugins in ConfigureRequest.
	NodeName string
	// HostService is served to every plugin process once, over the go-plugin
	// broker. Nil offers none.
	HostService hostv1.HostServiceServer

	// StartTimeout bounds a launch: exec, handshake, identity, configure and
	// the first health check. Default 10s.
	StartTimeout time.Duration
	// CallTimeout is the deadline Call gives a call whose context has no
	// earlier one. Default 2s.
	CallTimeout time.Duration
	// HealthInterval is the period of health checks. Default 10s: a call
	// that runs out of time checks at once, and a failed check is repeated
	// after HealthTimeout, so the period bounds only how late an idle hung
	// plugin is noticed, while each check pages the plugin's code back in.
	HealthInterval time.Duration
	// HealthTimeout bounds one health check. Default 1s.
	HealthTimeout time.Duration
	// HealthFailures consecutive failed checks mean the process hung.
	// Default 2.
	HealthFailures int
	// RestartBackoff is the delay before the second restart in a row (the
	// first is immediate); it doubles up to RestartBackoffMax, +-20% jitter.
	// Defaults 100ms and 30s.
	RestartBackoff, RestartBackoffMax time.Duration
	// More than RestartBudget restarts within RestartWindow mark the slot
	// Failed. Defaults 5 and 10m.
	RestartBudget int
	RestartWindow time.Duration
	// DrainTimeout is how long a retired process may finish in-flight calls
	// during a swap. Default 5s.
	DrainTimeout time.Duration
	// WatchDir hot-swaps a plugin when its binary changes in Dir.
	WatchDir bool
	// OnEvent, if set, is told of state changes, restarts and swaps. It is
	// called from several goroutines, possibly at once, and must not block.
	OnEvent func(Event)
	// OnCall, if set, is told of every finished call to a plugin process
	// (the core's and go-plugin's own), from the calling goroutine; it
	// must be quick.
	OnCall func(FinishedCall)
}

// withDefaults checks o and fills in defaults.
func (o Options) withDefaults() (Options, error) {
	var errs []error
	if !filepath.IsAbs(o.Dir) {
		errs = append(errs, fmt.Errorf("plugin directory %q: expected an absolute path", o.Dir))
	}
	if !filepath.IsAbs(o.SocketDir) {
		errs = append(errs, fmt.Errorf("plugin socket directory %q: expected an absolute path", o.SocketDir))
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.LogLevel == "" {
		level := o.Logger.GetLevel()
		if level == hclog.NoLevel {
			level = hclog.Off // a null logger drops every line
		}
		o.LogLevel = level.String()
	}
	if hclog.LevelFromString(o.LogLevel) == hclog.NoLevel {
		errs = append(errs, fmt.Errorf("plugin log level %q: expected trace, debug, info, warn, error or off", o.LogLevel))
	}
	durations := []struct {
		name  string
		value *time.Duration
		def   time.Duration
	}{
		{"StartTimeout", &o.StartTimeout, 10 * time.Second},
		{"CallTimeout", &o.CallTimeout, 2 * time.Second},
		{"HealthInterval", &o.HealthInterval, 10 * time.Second},
		{"HealthTimeout", &o.HealthTimeout, time.Second},
		{"RestartBackoff", &o.RestartBackoff, 100 * time.Millisecond},
		{"RestartBackoffMax", &o.RestartBackoffMax, 30 * time.Second},
		{"RestartWindow", &o.RestartWindow, 10 * time.Minute},
		{"DrainTimeout", &o.DrainTimeout, 5 * time.Second},
	}
	for _, d := range durations {
		switch {
		case *d.value < 0:
			errs = append(errs, fmt.Errorf("%s %s: expected a positive duration", d.name, *d.value))
		case *d.value == 0:
			*d.value = d.def
		}
	}
	counts := []struct {
		name  string
		value *int
		def   int
	}{
		{"HealthFailures", &o.HealthFailures, 2},
		{"RestartBudget", &o.RestartBudget, 5},
	}
	for _, c := range counts {
		switch {
		case *c.value < 0:
			errs = append(errs, fmt.Errorf("%s %d: expected a positive count", c.name, *c.value))
		case *c.value == 0:
			*c.value = c.def
		}
	}
	if o.RestartBackoffMax < o.RestartBackoff {
		errs = append(errs, fmt.Errorf("RestartBackoffMax %s is below RestartBackoff %s", o.RestartBackoffMax, o.RestartBackoff))
	}
	return o, errors.Join(errs...)
}

// prepareSocketDir creates the socket directory 0700 if missing and refuses
// one that another user could enter: it is what keeps other users from the
// plugins' sockets, which speak plain gRPC (transport.ClientConfig).
// go-plugin's per-plugin directories inside it are 0700 too, but a
// socket's path should not be guessable and replaceable.
// It removes the per-plugin directories a killed core left behind.
func prepareSocketDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create plugin socket directory: %w", err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("plugin socket directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("plugin socket directory %s is not a directory", dir)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("plugin socket directory %s has mode %04o; expected 0700", dir, perm)
	}
	if owner, euid := info.Sys().(*syscall.Stat_t).Uid, os.Geteuid(); int(owner) != euid {
		return fmt.Errorf("plugin socket directory %s is owned by uid %d; expected the core's, %d", dir, owner, euid)
	}
	stale, err := filepath.Glob(filepath.Join(dir, goPluginSocketDirPattern))
	if err != nil {
		return fmt.Errorf("plugin socket directory: %w", err)
	}
	for _, path := range stale {
		if err := os.RemoveAll(path); err != nil {
			return fmt.Errorf("remove a stale plugin socket directory: %w", err)
		}
	}
	return nil
}

// goPluginSocketDirPattern matches the directory go-plugin makes for each
// plugin process in UnixSocketConfig.TempDir (os.MkdirTemp "plugin-dir").
const goPluginSocketDirPattern = "plugin-dir*"
