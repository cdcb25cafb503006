//go:build e2e

// Package pressuree2e tests node pressure end to end: the real microlet
// binary with its real plugins on a private containerd (internal/devnode),
// pods that use memory and disk until the node evicts them, image garbage
// collection, and an eviction strategy swapped while pressure holds. Its
// harness (this file) is exported for the benchmarks in test/bench/pressure.
//
// The node e2e suite (test/e2e/node) has a harness of the same shape, in
// _test files that cannot be imported; this one keeps to what pressure
// tests need.
package pressuree2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/e2e"
	"github.com/microlet/microlet/internal/freeport"
)

const (
	// NodeName is a test node's name unless Options.NodeName says
	// otherwise.
	NodeName = "pressure-node"
	// WaitTimeout bounds every wait: reaching it is a failure, not a timing
	// assertion, so it is generous for a loaded 2-core VM.
	WaitTimeout  = 3 * time.Minute
	pollInterval = 200 * time.Millisecond
	// coreStopTimeout is how long a stopping core has before SIGKILL.
	coreStopTimeout = 30 * time.Second
)

// Plugin is one plugin block of the generated config; Body goes inside its
// config { } block, verbatim.
type Plugin struct{ Kind, Name, Body string }

// Options say how a node is set up.
type Options struct {
	// NodeName is the node's name; default NodeName.
	NodeName string
	// Plugins are the plugin blocks; nil: cgroup, eviction kubelet,
	// imagegc lru and stats, each with its defaults.
	Plugins []Plugin
	// Settings are extra top-level keys, values in HCL (`"2s"`, `false`).
	Settings map[string]string
	// Images are imported into the node's containerd before the core starts.
	Images []devnode.Image
	// RegistryCAs as devnode.Options.RegistryCAs: registries the node's
	// containerd trusts.
	RegistryCAs map[string]string
	// Env are extra environment variables of the core ("NAME=value").
	Env []string
	// BinDir holds the core and plugin binaries the node runs; "": BinDir.
	BinDir string
}

// DefaultPlugins are the plugins a node runs unless a test says otherwise.
func DefaultPlugins() []Plugin {
	return []Plugin{{Kind: "cgroup", Name: "default"}, {Kind: "eviction", Name: "kubelet"},
		{Kind: "imagegc", Name: "lru"}, {Kind: "stats", Name: "default"}}
}

// Node is a private containerd plus the real microlet process on it.
type Node struct {
	t   testing.TB
	Dev *devnode.Node
	// Name is the node's name.
	Name string
	CRI  runtimeapi.RuntimeServiceClient

	Dir, ConfigPath, RootDir, PodLogsDir string
	PushSocket, HealthzAddr, CgroupRoot  string
	// ReadOnlyAddr is the node API's read-only port (/pods, /metrics).
	ReadOnlyAddr string
	opts         Options

	log  *e2e.SyncBuffer
	core *e2e.Process
}

// Start brings up a node for t: a devnode, a cgroup root of its own and
// microlet on a generated config, serving once it returns. Everything is
// stopped and removed when t ends: the core (by its pid; no plugin process
// of it may be left), the devnode with every pod, the cgroup root, the files.
func Start(t testing.TB, opts Options) *Node {
	t.Helper()
	if opts.Plugins == nil {
		opts.Plugins = DefaultPlugins()
	}
	if opts.NodeName == "" {
		opts.NodeName = NodeName
	}
	n := &Node{t: t, Name: opts.NodeName, opts: opts, log: &e2e.SyncBuffer{}}
	n.Dir = e2e.ShortTempDir(t)
	// Runs after the core and the devnode are gone: a pod whose cleanup the
	// core's stop cut short leaves its volumes mounted under the root dir.
	t.Cleanup(func() { unmountBelow(t, n.Dir) })
	n.ConfigPath = filepath.Join(n.Dir, "microlet.hcl")
	n.RootDir = filepath.Join(n.Dir, "root")
	n.PodLogsDir = filepath.Join(n.Dir, "pod-logs")
	n.PushSocket = filepath.Join(n.Dir, "pods.sock")

	n.CgroupRoot = devnode.CgroupT(t, "microlet-pressure")
	n.Dev = devnode.StartT(t, devnode.Options{RegistryCAs: opts.RegistryCAs})
	n.CRI = n.Dev.RuntimeClient()
	for _, img := range opts.Images {
		ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
		err := n.Dev.ImportImage(ctx, img)
		cancel()
		if err != nil {
			t.Fatalf("importing %s: %v", img.Ref, err)
		}
	}
	ports, err := freeport.Ports(2)
	if err != nil {
		t.Fatal(err)
	}
	n.HealthzAddr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	n.ReadOnlyAddr = fmt.Sprintf("127.0.0.1:%d", ports[1])
	n.WriteConfig(opts.Plugins)
	t.Cleanup(n.stop)
	n.startCore()
	return n
}

// WriteConfig writes the agent's config with plugins, replacing the file by
// rename as config management does: a running core reloads it.
func (n *Node) WriteConfig(plugins []Plugin) {
	n.t.Helper()
	var b strings.Builder
	for _, kv := range [][2]string{
		{"node_name", n.Name},
		{"root_dir", n.RootDir},
		{"pod_logs_dir", n.PodLogsDir},
		{"container_logs_dir", filepath.Join(n.Dir, "container-logs")},
		{"plugin_dir", n.binDir()},
		{"container_runtime_endpoint", n.Dev.Endpoint},
		{"cni_conf_dir", n.Dev.CNIConfDir},
		{"pod_push_socket", n.PushSocket},
		{"healthz_bind_address", "127.0.0.1"},
		{"cgroup_root", n.CgroupRoot},
	} {
		fmt.Fprintf(&b, "%s = %q\n", kv[0], kv[1])
	}
	fmt.Fprintf(&b, "cni_bin_dirs = [%q]\n", n.Dev.CNIBinDir)
	fmt.Fprintf(&b, "healthz_port = %s\n", strings.TrimPrefix(n.HealthzAddr, "127.0.0.1:"))
	// The node API: the read-only port on loopback for /pods and /metrics;
	// no secure port, which tests here do not use (and which nodes running
	// side by side would all want on 10250). Settings may override both.
	settings := map[string]string{"address": `"127.0.0.1"`, "read_only_port": strings.TrimPrefix(n.ReadOnlyAddr, "127.0.0.1:"), "port": "0"}
	maps.Copy(settings, n.opts.Settings)
	for k, v := range settings {
		fmt.Fprintf(&b, "%s = %s\n", k, v)
	}
	for _, p := range plugins {
		fmt.Fprintf(&b, "\nplugin %q %q {\n  config {\n%s\n  }\n}\n", p.Kind, p.Name, p.Body)
	}
	tmp := filepath.Join(n.Dir, ".microlet.hcl.tmp")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		n.t.Fatal(err)
	}
	if err := os.Rename(tmp, n.ConfigPath); err != nil {
		n.t.Fatal(err)
	}
}

// binDir is where the node's binaries are (Options.BinDir).
func (n *Node) binDir() string {
	if n.opts.BinDir != "" {
		return n.opts.BinDir
	}
	return BinDir
}

// startCore runs microlet and waits until /healthz passes.
func (n *Node) startCore() {
	n.t.Helper()
	cmd := exec.Command(filepath.Join(n.binDir(), "microlet"), "--config", n.ConfigPath)
	cmd.Env = append(e2e.CoreEnv(), n.opts.Env...)
	cmd.Stdout, cmd.Stderr = n.log, n.log
	c, err := e2e.StartProcess(cmd)
	if err != nil {
		n.t.Fatalf("starting microlet: %v", err)
	}
	n.core = c
	n.Eventually("microlet serves /healthz", func() (bool, string) {
		if c.HasExited() {
			n.t.Fatalf("microlet exited while starting (%v)", cmd.ProcessState)
		}
		code, body := n.getFrom(n.HealthzAddr, "/healthz")
		return code == http.StatusOK, fmt.Sprintf("healthz %d: %s", code, body)
	})
}

// RestartCore stops the core (SIGTERM; its pods keep running) and starts
// it again on the current config.
func (n *Node) RestartCore() {
	n.t.Helper()
	n.stopCore()
	n.startCore()
}

// StopCore stops the core (SIGTERM; its pods keep running) until
// StartCore, for tests of what others see while the node is down.
func (n *Node) StopCore() {
	n.t.Helper()
	n.stopCore()
}

// StartCore starts a stopped core again on the current config.
func (n *Node) StartCore() {
	n.t.Helper()
	n.startCore()
}

// CorePID is the core's process id.
func (n *Node) CorePID() int { return n.core.PID() }

// stop ends the core after the test. On failure, or with -v, the core's
// log goes to the test log.
func (n *Node) stop() {
	n.stopCore()
	if n.t.Failed() || testing.Verbose() {
		n.t.Logf("microlet's log:\n%s", n.log.String())
	}
}

// stopCore ends the core: SIGTERM, then SIGKILL if it does not exit in
// time. No plugin process of it may remain.
func (n *Node) stopCore() {
	if n.core.HasExited() {
		return
	}
	plugins := n.PluginProcesses()
	if !n.core.Stop(coreStopTimeout) {
		n.t.Errorf("microlet did not exit %v after SIGTERM; killing it", coreStopTimeout)
	}
	e2e.ExpectGone(n.t, plugins)
}

// Log is what the core (its plugins' lines included) wrote so far.
func (n *Node) Log() string { return n.log.String() }

// Eventually polls cond until it holds; after WaitTimeout the test fails
// with what was awaited and cond's last description of what it saw.
func (n *Node) Eventually(what string, cond func() (ok bool, seen string)) {
	n.t.Helper()
	n.EventuallyWithin(WaitTimeout, what, cond)
}

// EventuallyWithin is Eventually with a bound of the test's own, for a
// wait that something else would end if it lasted longer (a periodic
// cycle the test must not see).
func (n *Node) EventuallyWithin(timeout time.Duration, what string, cond func() (ok bool, seen string)) {
	n.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("after %v still waiting for %s; last seen: %s", timeout, what, seen)
		}
		time.Sleep(pollInterval)
	}
}

// Push POSTs a pod manifest (YAML; IMAGE names the node's busybox image) to
// the node's push endpoint.
func (n *Node) Push(manifest string) {
	n.t.Helper()
	n.pushRequest(http.MethodPost, "/pods", strings.ReplaceAll(manifest, "IMAGE", devnode.DefaultTestImage))
}

// Delete removes a pushed pod (by the name pushed) through the push endpoint.
func (n *Node) Delete(name string) {
	n.t.Helper()
	n.pushRequest(http.MethodDelete, "/pods/default/"+name, "")
}

func (n *Node) pushRequest(method, path, body string) {
	n.t.Helper()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", n.PushSocket)
		},
	}}
	req, err := http.NewRequest(method, "http://localhost"+path, strings.NewReader(body))
	if err != nil {
		n.t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		n.t.Fatalf("%s %s on the push socket: %v", method, path, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		n.t.Fatalf("%s %s: %s: %s", method, path, resp.Status, answer)
	}
}

// Pod is the named pushed pod as /pods lists it, nil if it is not there.
// name is the name pushed; the pod runs as <name>-<node>.
func (n *Node) Pod(name string) *v1.Pod {
	n.t.Helper()
	code, body := n.get("/pods")
	if code != http.StatusOK {
		n.t.Fatalf("GET /pods: %d %s", code, body)
	}
	var list v1.PodList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		n.t.Fatalf("GET /pods: %v", err)
	}
	for i := range list.Items {
		if list.Items[i].Name == name+"-"+n.Name {
			return &list.Items[i]
		}
	}
	return nil
}

// WaitPod waits until the named pod is listed and cond holds for it.
func (n *Node) WaitPod(name, what string, cond func(*v1.Pod) bool) *v1.Pod {
	n.t.Helper()
	var found *v1.Pod
	n.Eventually(fmt.Sprintf("pod %s: %s", name, what), func() (bool, string) {
		found = n.Pod(name)
		if found == nil {
			return false, "not on /pods"
		}
		return cond(found), DescribePod(found)
	})
	return found
}

// Containers lists a pod's containers on the runtime, every instance.
func (n *Node) Containers(uid types.UID) []*runtimeapi.Container {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := n.CRI.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(uid)},
	}})
	if err != nil {
		n.t.Fatalf("ListContainers: %v", err)
	}
	return resp.Containers
}

// WaitStopped waits until the runtime runs nothing of the named pod (by the
// name pushed): no running container, no ready sandbox.
func (n *Node) WaitStopped(name string) {
	n.t.Helper()
	selector := map[string]string{"io.kubernetes.pod.name": name + "-" + n.Name}
	n.Eventually("nothing of pod "+name+" runs on the runtime", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sandboxes, err := n.CRI.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
			LabelSelector: selector, State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}})
		if err != nil {
			return false, err.Error()
		}
		containers, err := n.CRI.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			LabelSelector: selector, State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}})
		if err != nil {
			return false, err.Error()
		}
		return len(sandboxes.Items)+len(containers.Containers) == 0, fmt.Sprintf("%d ready sandboxes, %d running containers", len(sandboxes.Items), len(containers.Containers))
	})
}

// PluginPID is the pid of the core's child running microlet-<kind>-<name>,
// 0 if none.
func (n *Node) PluginPID(kind, name string) int {
	for pid, prog := range n.PluginProcesses() {
		if prog == "microlet-"+kind+"-"+name {
			return pid
		}
	}
	return 0
}

// PluginProcesses are the core's live children (its plugins): pid -> the
// program name (argv[0]; the plugin host execs a descriptor).
func (n *Node) PluginProcesses() map[int]string {
	procs, err := e2e.ChildProcesses(n.CorePID())
	if err != nil {
		n.t.Fatal(err)
	}
	return procs
}

// get GETs a path of the node API's read-only port: status code and body,
// 0 when the core does not answer.
func (n *Node) get(path string) (int, string) {
	return n.getFrom(n.ReadOnlyAddr, path)
}

func (n *Node) getFrom(addr, path string) (int, string) {
	resp, err := httpClient.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

// DescribePod is a one-line summary of a pod's status for failure messages.
func DescribePod(p *v1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s uid %s phase %s", p.Name, p.UID, p.Status.Phase)
	if p.Status.Reason != "" {
		fmt.Fprintf(&b, " (%s: %s)", p.Status.Reason, p.Status.Message)
	}
	for _, c := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, " [%s restarts=%d", c.Name, c.RestartCount)
		switch s := c.State; {
		case s.Running != nil:
			b.WriteString(" running")
		case s.Waiting != nil:
			fmt.Fprintf(&b, " waiting %s", s.Waiting.Reason)
		case s.Terminated != nil:
			fmt.Fprintf(&b, " terminated %d %s", s.Terminated.ExitCode, s.Terminated.Reason)
		}
		b.WriteString("]")
	}
	return b.String()
}

// unmountBelow detaches every mount below dir, deepest first.
func unmountBelow(t testing.TB, dir string) {
	mounts, err := procfs.GetMounts()
	if err != nil {
		t.Errorf("reading mounts: %v", err)
		return
	}
	var below []string
	for _, m := range mounts {
		if strings.HasPrefix(m.MountPoint, dir+"/") {
			below = append(below, m.MountPoint)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(below)))
	for _, m := range below {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", m, err)
		}
	}
}
