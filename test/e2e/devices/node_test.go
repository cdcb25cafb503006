//go:build e2e

package devicese2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/e2e"
	"github.com/microlet/microlet/internal/freeport"
)

const (
	// nodeName is every test node's name: static pod "fuse" runs as
	// "fuse-e2e-node".
	nodeName = "e2e-node"
	// waitLimit bounds every wait for the node to do something.
	waitLimit = 90 * time.Second
	// coreStopTimeout is how long a stopping core has before SIGKILL.
	coreStopTimeout = 30 * time.Second
)

// testNode is a private containerd plus the real microlet on it.
type testNode struct {
	t   *testing.T
	dev *devnode.Node
	cri runtimeapi.RuntimeServiceClient

	dir, configPath, manifestDir, rootDir string
	healthzAddr, cgroupRoot               string
	// readOnlyAddr is the node API's read-only port (/pods).
	readOnlyAddr string
	// plugins is the HCL of the plugin blocks; cgroupConfig the body of
	// the cgroup plugin's config block.
	plugins, cgroupConfig string

	// log is what every run of the core wrote, its plugins' lines included.
	log  *e2e.SyncBuffer
	core *e2e.Process
}

// startNode brings up a devnode, a cgroup root of its own and microlet
// with the given plugin blocks, and waits until it serves /healthz.
// Everything is stopped and removed when t ends: the core (by its pid),
// the devnode with every pod, the cgroup root, the files.
func startNode(t *testing.T, plugins string) *testNode {
	t.Helper()
	return startNodeCgroup(t, "", plugins)
}

// startNodeCgroup is startNode with the cgroup plugin configured so.
func startNodeCgroup(t *testing.T, cgroupConfig, plugins string) *testNode {
	t.Helper()
	n := &testNode{t: t, log: &e2e.SyncBuffer{}, plugins: plugins, cgroupConfig: cgroupConfig}
	n.dir = e2e.ShortTempDir(t)
	n.configPath = filepath.Join(n.dir, "microlet.hcl")
	n.manifestDir = filepath.Join(n.dir, "manifests")
	n.rootDir = filepath.Join(n.dir, "root")
	if err := os.MkdirAll(n.manifestDir, 0o755); err != nil {
		t.Fatal(err)
	}
	n.cgroupRoot = devnode.CgroupT(t, "microlet-e2e-devices")
	n.dev = devnode.StartT(t)
	n.cri = n.dev.RuntimeClient()
	ports, err := freeport.Ports(2)
	if err != nil {
		t.Fatal(err)
	}
	n.healthzAddr, n.readOnlyAddr = fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	n.writeConfig()
	t.Cleanup(n.stop)
	n.startCore()
	return n
}

func (n *testNode) writeConfig() {
	var b strings.Builder
	for _, kv := range [][2]string{
		{"node_name", nodeName},
		{"root_dir", n.rootDir},
		{"pod_logs_dir", filepath.Join(n.dir, "pod-logs")},
		{"container_logs_dir", filepath.Join(n.dir, "container-logs")},
		{"plugin_dir", binDir},
		{"container_runtime_endpoint", n.dev.Endpoint},
		{"static_pod_path", n.manifestDir},
		{"cni_conf_dir", n.dev.CNIConfDir},
		{"pod_push_socket", filepath.Join(n.dir, "pods.sock")},
		{"healthz_bind_address", "127.0.0.1"},
		{"cgroup_root", n.cgroupRoot},
	} {
		fmt.Fprintf(&b, "%s = %q\n", kv[0], kv[1])
	}
	fmt.Fprintf(&b, "cni_bin_dirs = [%q]\n", n.dev.CNIBinDir)
	fmt.Fprintf(&b, "healthz_port = %s\n", n.healthzAddr[strings.LastIndex(n.healthzAddr, ":")+1:])
	// The node API: its read-only port on loopback for /pods; no secure
	// port, which nodes running side by side would all want on 10250.
	fmt.Fprintf(&b, "address = \"127.0.0.1\"\nport = 0\nread_only_port = %s\n", n.readOnlyAddr[strings.LastIndex(n.readOnlyAddr, ":")+1:])
	fmt.Fprintf(&b, "plugin \"cgroup\" \"default\" {\n  config {\n%s\n  }\n}\n", n.cgroupConfig)
	b.WriteString(n.plugins)
	// By rename: a running core reloads the config and must not read it
	// half written.
	tmp := filepath.Join(n.dir, ".microlet.hcl.tmp")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		n.t.Fatal(err)
	}
	if err := os.Rename(tmp, n.configPath); err != nil {
		n.t.Fatal(err)
	}
}

// startCore runs microlet and waits until /healthz passes.
func (n *testNode) startCore() {
	n.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "microlet"), "--config", n.configPath)
	cmd.Stdout, cmd.Stderr = n.log, n.log
	cmd.Env = e2e.CoreEnv()
	c, err := e2e.StartProcess(cmd)
	if err != nil {
		n.t.Fatalf("starting microlet: %v", err)
	}
	n.core = c
	n.eventually("microlet serves /healthz", func() (bool, string) {
		if c.HasExited() {
			n.t.Fatalf("microlet exited while starting (%v)", cmd.ProcessState)
		}
		resp, err := httpClient.Get("http://" + n.healthzAddr + "/healthz")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK, string(body)
	})
}

// killCore SIGKILLs the core, as a crash would, and waits until it and
// its plugins are gone (they die with it).
func (n *testNode) killCore() {
	n.t.Helper()
	plugins := n.pluginProcesses()
	if err := n.core.Kill(); err != nil {
		n.t.Fatalf("SIGKILL the core: %v", err)
	}
	e2e.ExpectGone(n.t, plugins)
}

// stop ends the core after the test: SIGTERM, then SIGKILL if it does not
// exit in time. On failure its log goes to the test log.
func (n *testNode) stop() {
	if !n.core.HasExited() {
		plugins := n.pluginProcesses()
		if !n.core.Stop(coreStopTimeout) {
			n.t.Errorf("microlet did not exit %v after SIGTERM; killing it", coreStopTimeout)
		}
		e2e.ExpectGone(n.t, plugins)
	}
	if n.t.Failed() {
		n.t.Logf("microlet's log:\n%s", n.log.String())
	}
}

// pluginProcesses are the core's live children: its plugins.
func (n *testNode) pluginProcesses() map[int]string {
	procs, err := e2e.ChildProcesses(n.core.PID())
	if err != nil {
		n.t.Fatal(err)
	}
	return procs
}

// addPod writes a static pod manifest; the pod runs as <name>-e2e-node.
func (n *testNode) addPod(name, manifest string) {
	n.t.Helper()
	tmp := filepath.Join(n.manifestDir, "."+name+".yaml")
	if err := os.WriteFile(tmp, []byte(manifest), 0o644); err != nil {
		n.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(n.manifestDir, name+".yaml")); err != nil {
		n.t.Fatal(err)
	}
}

// devicePod is a static pod whose one container sleeps holding count
// devices of resource.
func devicePod(name, resource string, count int) string {
	return sleepPod(name, fmt.Sprintf("%s: \"%d\"", resource, count))
}

// sleepPod is a static pod whose one container sleeps with limits, each
// "resource: quantity"; with none it is BestEffort.
func sleepPod(name string, limits ...string) string {
	pod := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    command: ["sleep", "3600"]
`, name, devnode.DefaultTestImage)
	if len(limits) > 0 {
		pod += "    resources:\n      limits:\n"
		for _, l := range limits {
			pod += "        " + l + "\n"
		}
	}
	return pod
}

// pod is the named static pod as microlet's /pods shows it, or nil.
func (n *testNode) pod(name string) *v1.Pod {
	n.t.Helper()
	resp, err := httpClient.Get("http://" + n.readOnlyAddr + "/pods")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var list v1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		n.t.Fatalf("decoding /pods: %v", err)
	}
	for i := range list.Items {
		if list.Items[i].Name == name+"-"+nodeName {
			return &list.Items[i]
		}
	}
	return nil
}

// running waits until the pod's container runs and returns its status.
func (n *testNode) running(name string) *v1.Pod {
	n.t.Helper()
	var pod *v1.Pod
	n.eventually("pod "+name+" running", func() (bool, string) {
		pod = n.pod(name)
		if pod == nil {
			return false, "not listed"
		}
		cs := pod.Status.ContainerStatuses
		ok := pod.Status.Phase == v1.PodRunning && len(cs) == 1 && cs[0].State.Running != nil
		return ok, fmt.Sprintf("phase %q reason %q message %q containers %+v", pod.Status.Phase, pod.Status.Reason, pod.Status.Message, cs)
	})
	return pod
}

// exec runs cmd in the pod's container and returns its output.
func (n *testNode) exec(pod *v1.Pod, cmd ...string) string {
	n.t.Helper()
	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	ctx, cancel := context.WithTimeout(n.t.Context(), 30*time.Second)
	defer cancel()
	resp, err := n.cri.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 20})
	if err != nil {
		n.t.Fatalf("exec %v in %s: %v", cmd, pod.Name, err)
	}
	if resp.ExitCode != 0 {
		n.t.Fatalf("exec %v in %s exited %d: %s%s (is core/kinds/devices wired into the agent?)", cmd, pod.Name, resp.ExitCode, resp.Stdout, resp.Stderr)
	}
	return string(resp.Stdout)
}

// eventually polls cond until it holds, failing the test with cond's last
// report after waitLimit.
func (n *testNode) eventually(what string, cond func() (bool, string)) {
	n.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		ok, report := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("timed out waiting for %s: %s", what, report)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var httpClient = &http.Client{Timeout: 10 * time.Second}
