//go:build e2e

// Package pluginhoste2e tests core/pluginhost against real plugin processes
// (test/testplugins). Its helpers build those programs, install them in a
// plugin directory the trust checks accept, and observe processes; the
// benchmarks in test/bench/pluginhost use them too.
package pluginhoste2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/internal/e2e"
	"github.com/microlet/microlet/internal/lastresort"
	basev1 "github.com/microlet/microlet/proto/microlet/base/v1"
)

// Binaries are the test programs, built once per test binary run.
type Binaries struct {
	// Plugin reports version 1.0.0, PluginV2 2.0.0; PluginRefusing refuses
	// every Configure.
	Plugin, PluginV2, PluginRefusing string
	// Core is testcore.
	Core string
}

// Build builds the test programs into dir, as the Makefile builds plugins
// (static, stripped), and makes dir root-owned 0755 so the trust checks
// accept binaries copied from it.
func Build(dir string) (*Binaries, error) {
	bins := &Binaries{
		Plugin:         filepath.Join(dir, "testplugin-v1"),
		PluginV2:       filepath.Join(dir, "testplugin-v2"),
		PluginRefusing: filepath.Join(dir, "testplugin-refusing"),
		Core:           filepath.Join(dir, "testcore"),
	}
	const pkg = "github.com/microlet/microlet/test/testplugins/"
	builds := []struct{ out, pkg, x string }{
		{bins.Plugin, pkg + "testplugin", "-X main.version=1.0.0"},
		{bins.PluginV2, pkg + "testplugin", "-X main.version=2.0.0"},
		{bins.PluginRefusing, pkg + "testplugin", "-X main.version=3.0.0 -X main.refuseConfig=true"},
		{bins.Core, pkg + "testcore", ""},
	}
	for _, b := range builds {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w "+b.x, "-o", b.out, b.pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	return bins, os.Chmod(dir, 0o755)
}

// PluginDir makes an empty plugin directory the trust checks accept: 0755,
// owned by the test's user (root in CI). It is removed after the test.
func PluginDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "microlet-plugins-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// SocketDir makes a short 0700 directory for plugin sockets (a unix socket
// path is limited to 108 bytes). It is removed after the test.
func SocketDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mlsock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Install puts a copy of src into dir as name, mode 0755, by rename, as an
// operator replaces a plugin binary.
func Install(t testing.TB, src, dir, name string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(dir, ".install-")
	if err != nil {
		t.Fatal(err)
	}
	_, copyErr := io.Copy(tmp, in)
	closeErr := tmp.Close()
	chmodErr := os.Chmod(tmp.Name(), 0o755)
	if copyErr != nil || closeErr != nil || chmodErr != nil {
		os.Remove(tmp.Name())
		t.Fatalf("install %s: %v %v %v", name, copyErr, closeErr, chmodErr)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		os.Remove(tmp.Name())
		t.Fatal(err)
	}
}

// NewHost starts a plugin host on dir with fast supervision settings, a
// logger writing to the test log, and Close after the test. Fields set in
// opts win.
func NewHost(t testing.TB, dir string, opts pluginhost.Options) *pluginhost.Host {
	t.Helper()
	opts.Dir = dir
	if opts.SocketDir == "" {
		opts.SocketDir = SocketDir(t)
	}
	if opts.Logger == nil {
		opts.Logger = hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Info, Output: LogWriter{t}})
	}
	if opts.HealthInterval == 0 {
		opts.HealthInterval = 100 * time.Millisecond
	}
	if opts.HealthTimeout == 0 {
		opts.HealthTimeout = 200 * time.Millisecond
	}
	host, err := pluginhost.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := host.Close(ctx); err != nil {
			t.Errorf("close plugin host: %v", err)
		}
	})
	return host
}

// LogWriter sends log lines to the test log.
type LogWriter struct{ T testing.TB }

func (w LogWriter) Write(p []byte) (int, error) {
	w.T.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// GetIdentity asks the slot's serving process who it is, through a
// pluginhost.Client: the round trip the benchmarks measure.
func GetIdentity(ctx context.Context, p *pluginhost.Plugin) (*basev1.GetIdentityResponse, error) {
	var out *basev1.GetIdentityResponse
	client := pluginhost.Client[basev1.PluginServiceClient]{Slot: p, New: basev1.NewPluginServiceClient}
	err := client.Call(ctx, func(ctx context.Context, c pluginhost.Conn[basev1.PluginServiceClient]) error {
		var err error
		out, err = c.Client.GetIdentity(ctx, &basev1.GetIdentityRequest{})
		return err
	})
	return out, err
}

// Eventually polls cond every 10ms until it holds or timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SlotStatus is the status of the host's slot of kind (and name, for
// devices); ok is false if there is none.
func SlotStatus(host *pluginhost.Host, kind pluginhost.Kind, name string) (pluginhost.Status, bool) {
	for _, st := range host.Status() {
		if st.Kind == kind && (name == "" || st.Name == name) {
			return st, true
		}
	}
	return pluginhost.Status{}, false
}

// Core is a running testcore.
type Core struct {
	Cmd *exec.Cmd
	// Plugins are the pids of its plugins, by kind/name.
	Plugins map[string]int
	// Log is what it has written to stderr, its plugins' lines included.
	Log e2e.SyncBuffer
}

// StartCore runs testcore with plugins ("kind/name", ...) installed in dir
// and waits for its ready line. The process is killed (by pid) and reaped
// after the test if it still runs.
func StartCore(t testing.TB, core, dir string, plugins ...string) *Core {
	t.Helper()
	c := &Core{Cmd: exec.Command(core, "-dir", dir, "-socket-dir", SocketDir(t), "-plugins", strings.Join(plugins, ",")), Plugins: map[string]int{}}
	cmd := c.Cmd
	cmd.Stderr = io.MultiWriter(LogWriter{t}, &c.Log)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// With a parent-death signal: a test binary that times out or is
	// killed takes the core, and so its plugins, along.
	if err := lastresort.StartCommand(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		fields := map[string]string{}
		for _, f := range strings.Fields(lines.Text())[1:] {
			k, v, _ := strings.Cut(f, "=")
			fields[k] = v
		}
		if strings.HasPrefix(lines.Text(), "ready ") {
			return c
		}
		pid, err := strconv.Atoi(fields["pid"])
		if err != nil || pid <= 0 {
			t.Fatalf("testcore printed %q: expected a plugin line with a pid", lines.Text())
		}
		c.Plugins[fields["kind"]+"/"+fields["name"]] = pid
	}
	t.Fatalf("testcore ended before it was ready: %v", lines.Err())
	return nil
}
