//go:build e2e

package nodebench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/e2e"
	"github.com/microlet/microlet/internal/freeport"
)

// envMicroletBin names the directory holding the microlet binary and its
// plugins (make build's _output/bin). Unset: the benchmark builds them.
// envBaselineBin, when set, names another build (the core before a
// change) that runs as a fourth system, "baseline", taking turns with the
// others: on a shared machine, before and after are best compared in one
// run.
const envBaselineBin = "BENCH_BASELINE_BIN_DIR"

// microletPlugins are every plugin kind the core hosts, each with the
// plugin the example config names and its config body, given the core's
// cgroup root. Of the devices plugins, the host devices one: the bridge to
// the upstream device plugin API serves a host-wide socket the kubelet's
// device manager serves too.
var microletPlugins = []struct {
	kind, name string
	config     func(cgroupRoot string) string
}{
	{"cgroup", "default", noConfig},
	{"devices", "hostdev", func(string) string {
		return `resources = [{ name = "microlet.dev/fuse", paths = ["/dev/fuse"] }]`
	}},
	{"eviction", "kubelet", noConfig},
	{"imagegc", "lru", noConfig},
	{"probes", "default", noConfig},
	// The stats plugin finds the pods under the private cgroup root.
	{"stats", "default", func(cgroupRoot string) string { return "pods_cgroup = " + strconv.Quote(cgroupRoot+"/kubepods") }},
}

func noConfig(string) string { return "" }

const (
	// readyTimeout bounds the core's start until every plugin serves.
	readyTimeout = time.Minute
	// stopGrace is how long the core gets to stop its plugins at SIGTERM.
	stopGrace = 15 * time.Second
)

// microlet is the real microlet binary with every plugin, on its own
// devnode, running the benchmark's pods as static pods.
type microlet struct {
	manifestDir
	node    *devnode.Node
	logPath string
	proc    *os.Process
	exited  <-chan struct{}
	// plugins are the plugin processes found once the core was ready.
	plugins []process
}

// process is a process identified beyond its PID, which the kernel may
// reuse: its start time, in clock ticks since boot.
type process struct {
	pid       int
	startTime uint64
}

// startMicrolet runs the build in $E2E_BIN_DIR (or built from this
// checkout).
func startMicrolet(b *testing.B) system {
	return runMicrolet(b, "microlet", microletBinaries(b, os.Getenv(e2e.EnvDir)))
}

// startBaseline runs the build in $BENCH_BASELINE_BIN_DIR.
func startBaseline(b *testing.B) system {
	return runMicrolet(b, "baseline", microletBinaries(b, os.Getenv(envBaselineBin)))
}

// runMicrolet starts the core in bin on a node of its own; name tells its
// cgroups apart from another microlet's; settings are extra top-level
// config lines.
func runMicrolet(b *testing.B, name, bin string, settings ...string) *microlet {
	cgroupRoot := devnode.CgroupT(b, "microlet-bench-node-"+name)
	n := devnode.StartT(b)
	root := filepath.Join(n.Dir, "microlet")
	m := &microlet{
		manifestDir: manifestDir{dir: filepath.Join(root, "manifests"), image: n.PauseImage},
		node:        n,
		logPath:     filepath.Join(n.Dir, "microlet.log"),
	}
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		b.Fatal(err)
	}
	ports, err := freeport.Ports(2)
	if err != nil {
		b.Fatal(err)
	}
	port, apiPort := ports[0], ports[1]
	configPath := filepath.Join(n.Dir, "microlet.hcl")
	if err := os.WriteFile(configPath, []byte(microletConfig(n, bin, root, m.dir, cgroupRoot, port, apiPort, settings)), 0o644); err != nil {
		b.Fatal(err)
	}
	logFile, err := os.Create(m.logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(bin, "microlet"), "--config", configPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = e2e.CoreEnv()
	proc, err := e2e.StartProcess(cmd)
	if err != nil {
		b.Fatal(err)
	}
	m.proc, m.exited = cmd.Process, proc.Exited()
	// Registered after the node's, so it runs first: a core left running
	// would restart the pods the node's Close stops.
	b.Cleanup(func() {
		if err := m.stop(); err != nil {
			b.Errorf("microlet: %v", err)
		}
	})
	b.Logf("microlet: pid %d, log %s", m.proc.Pid, m.logPath)
	if err := m.waitReady(fmt.Sprintf("http://127.0.0.1:%d/healthz", port)); err != nil {
		b.Fatal(err)
	}
	return m
}

// microletConfig is the core's config: defaults, except what puts it on
// the devnode next to other agents (private root, cgroup root, logs,
// healthz and node API ports), the static pod path, and one block per
// plugin, then settings. The node API serves, as the kubelet's does, on a
// port of its own.
func microletConfig(n *devnode.Node, bin, root, manifests, cgroupRoot string, healthzPort, apiPort int, settings []string) string {
	var c strings.Builder
	for _, kv := range [][2]string{
		{"node_name", strconv.Quote("bench-microlet")},
		{"root_dir", strconv.Quote(root)},
		{"pod_logs_dir", strconv.Quote(filepath.Join(root, "pod-logs"))},
		{"container_logs_dir", strconv.Quote(filepath.Join(root, "containers"))},
		{"plugin_dir", strconv.Quote(bin)},
		{"container_runtime_endpoint", strconv.Quote(n.Endpoint)},
		{"static_pod_path", strconv.Quote(manifests)},
		{"cni_conf_dir", strconv.Quote(n.CNIConfDir)},
		{"cni_bin_dirs", "[" + strconv.Quote(n.CNIBinDir) + "]"},
		{"cgroup_root", strconv.Quote(cgroupRoot)},
		{"healthz_port", strconv.Itoa(healthzPort)},
		{"address", strconv.Quote("127.0.0.1")},
		{"port", strconv.Itoa(apiPort)},
	} {
		fmt.Fprintf(&c, "%s = %s\n", kv[0], kv[1])
	}
	for _, line := range settings {
		fmt.Fprintln(&c, line)
	}
	for _, p := range microletPlugins {
		fmt.Fprintf(&c, "plugin %q %q {\n  config {\n    %s\n  }\n}\n", p.kind, p.name, p.config(cgroupRoot))
	}
	return c.String()
}

// waitReady waits until healthz passes and every plugin process runs.
func (m *microlet) waitReady(healthz string) error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		last = m.checkReady(ctx, client, healthz)
		if last == nil {
			return nil
		}
		select {
		case <-m.exited:
			return fmt.Errorf("microlet exited before it was ready (%v); its log ends with:\n%s", last, m.logTail())
		case <-ctx.Done():
			return fmt.Errorf("microlet not ready after %v: %v; its log ends with:\n%s", readyTimeout, last, m.logTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (m *microlet) checkReady(ctx context.Context, client *http.Client, healthz string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, healthz, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", healthz, resp.Status)
	}
	plugins, err := children(m.proc.Pid)
	if err != nil {
		return err
	}
	if len(plugins) != len(microletPlugins) {
		return fmt.Errorf("%d plugin processes run, want %d", len(plugins), len(microletPlugins))
	}
	m.plugins = plugins
	return nil
}

// logTail is the end of the core's log, for errors: the log goes with the
// node's directory.
func (m *microlet) logTail() string {
	data, err := os.ReadFile(m.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

func (m *microlet) devnode() *devnode.Node { return m.node }

// processes are the core and the plugin processes it started; a plugin
// that was restarted since is an error, as its figures would be partial.
func (m *microlet) processes() ([]int, error) {
	pids := []int{m.proc.Pid}
	select {
	case <-m.exited:
		return nil, fmt.Errorf("microlet exited; its log ends with:\n%s", m.logTail())
	default:
	}
	for _, p := range m.plugins {
		if !p.same() {
			return nil, fmt.Errorf("plugin process %d is gone (restarted?); the core's log ends with:\n%s", p.pid, m.logTail())
		}
		pids = append(pids, p.pid)
	}
	return pids, nil
}

// stop ends the core with SIGTERM (it stops its plugins), SIGKILL after
// stopGrace, then kills any plugin process it left, by PID.
func (m *microlet) stop() error {
	var errs []error
	if err := m.proc.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		errs = append(errs, err)
	}
	select {
	case <-m.exited:
	case <-time.After(stopGrace):
		errs = append(errs, fmt.Errorf("did not stop within %v of SIGTERM; killed", stopGrace))
		_ = m.proc.Kill()
		<-m.exited
	}
	for _, p := range m.plugins {
		if p.same() {
			errs = append(errs, fmt.Errorf("plugin process %d outlived the core; killed", p.pid))
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
	return errors.Join(errs...)
}

// microletBinaries is a directory of the benchmark's own holding the core
// and every plugin: copies of those in src, or, if src is "", built as the
// Makefile builds them (static, stripped: the size of the binaries is part
// of the memory figures). Copies, out of the page cache, for the reasons
// e2e.PrivateBinaries gives.
func microletBinaries(b *testing.B, src string) string {
	if src == "" {
		src = b.TempDir()
		if err := e2e.Build(src); err != nil {
			b.Fatal(err)
		}
	}
	names := []string{"microlet"}
	for _, p := range microletPlugins {
		names = append(names, fmt.Sprintf("microlet-%s-%s", p.kind, p.name))
	}
	dir := b.TempDir()
	if err := e2e.PrivateBinaries(src, dir, names); err != nil {
		b.Fatal(err)
	}
	return dir
}
