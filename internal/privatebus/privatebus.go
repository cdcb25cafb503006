// Package privatebus runs, for tests, a private system D-Bus (Debian's
// dbus-daemon with a config of its own, listening on a unix socket in a
// temporary directory) and the logind stand-in (logind-standin) on it:
// this machine, like CI's, has no systemd. Everything is stopped by PID
// and removed when the test ends.
package privatebus

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/microlet/microlet/internal/e2e"
	"github.com/microlet/microlet/internal/lastresort"
	"github.com/microlet/microlet/internal/prereq"
)

// config lets every local user (the tests run as root) own any name,
// call any method and receive every signal.
const config = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`

// Bus is a running private bus.
type Bus struct {
	// Address is the bus's address, as DBUS_SYSTEM_BUS_ADDRESS takes it.
	Address string
	dir     string
}

// Start runs dbus-daemon on a private socket until t ends.
func Start(t *testing.T) *Bus {
	t.Helper()
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		prereq.Missing(t, "dbus-daemon (Debian's dbus package) runs the private system bus")
		return nil
	}
	dir := e2e.ShortTempDir(t)
	socket := filepath.Join(dir, "bus")
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(config, socket)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(daemon, "--config-file="+conf, "--nofork", "--nopidfile", "--nosyslog")
	var out e2e.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := lastresort.StartCommand(cmd); err != nil {
		t.Fatalf("starting dbus-daemon: %v", err)
	}
	stopByPID(t, "dbus-daemon", cmd, &out)
	bus := &Bus{Address: "unix:path=" + socket, dir: dir}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(socket); err == nil {
			return bus
		}
		if time.Now().After(deadline) {
			t.Fatalf("dbus-daemon made no socket at %s in 10s; it wrote:\n%s", socket, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stopByPID kills cmd's process by its PID when t ends and waits for it.
// Started with lastresort.StartCommand, it also dies with the test binary
// when that times out or is killed.
func stopByPID(t *testing.T, what string, cmd *exec.Cmd, out *e2e.SyncBuffer) {
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s (pid %d) wrote:\n%s", what, cmd.Process.Pid, out.String())
		}
	})
}

// Logind is the running stand-in.
type Logind struct {
	t     *testing.T
	stdin io.WriteCloser

	mu    sync.Mutex
	lines []string
	added chan struct{}
}

// LogindOptions are the stand-in's flags.
type LogindOptions struct {
	// Delay is InhibitDelayMaxUSec at the start.
	Delay time.Duration
	// ConfDir is the drop-in directory the stand-in rereads on
	// systemd's KillUnit(systemd-logind.service, SIGHUP).
	ConfDir string
}

// StartLogind builds the stand-in and runs it on bus until t ends; it
// owns its names once this returns.
func StartLogind(t *testing.T, bus *Bus, opts LogindOptions) *Logind {
	t.Helper()
	bin := filepath.Join(bus.dir, "logind-standin")
	if err := e2e.BuildProgram(bin, "./internal/privatebus/logind-standin"); err != nil {
		t.Fatalf("the logind stand-in: %v", err)
	}
	cmd := exec.Command(bin, "-address", bus.Address, "-delay", opts.Delay.String(), "-conf-dir", opts.ConfDir)
	l := &Logind{t: t, added: make(chan struct{}, 1)}
	var stderr e2e.SyncBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if l.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := lastresort.StartCommand(cmd); err != nil {
		t.Fatalf("starting the logind stand-in: %v", err)
	}
	stopByPID(t, "the logind stand-in", cmd, &stderr)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			l.mu.Lock()
			l.lines = append(l.lines, sc.Text())
			l.mu.Unlock()
			select {
			case l.added <- struct{}{}:
			default:
			}
		}
	}()
	l.Expect("ready", 30*time.Second)
	return l
}

// Send writes a command ("prepare true") to the stand-in.
func (l *Logind) Send(command string) {
	l.t.Helper()
	if _, err := io.WriteString(l.stdin, command+"\n"); err != nil {
		l.t.Fatalf("telling the logind stand-in %q: %v", command, err)
	}
}

// Lines is what the stand-in reported so far.
func (l *Logind) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// Expect waits up to timeout for a line starting with prefix and returns
// its index in Lines; it fails the test without one.
func (l *Logind) Expect(prefix string, timeout time.Duration) int {
	l.t.Helper()
	i, ok := l.Wait(prefix, 0, timeout)
	if !ok {
		l.t.Fatalf("the logind stand-in did not report %q in %s; it reported:\n%s", prefix, timeout, strings.Join(l.Lines(), "\n"))
	}
	return i
}

// Wait waits up to timeout for a line from index from on starting with
// prefix.
func (l *Logind) Wait(prefix string, from int, timeout time.Duration) (int, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		lines := l.Lines()
		for i := from; i < len(lines); i++ {
			if strings.HasPrefix(lines[i], prefix) {
				return i, true
			}
		}
		select {
		case <-l.added:
		case <-deadline.C:
			return -1, false
		}
	}
}
