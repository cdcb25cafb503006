//go:build e2e

package nodee2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/e2e"
	"github.com/microlet/microlet/internal/freeport"
	"github.com/microlet/microlet/internal/prereq"
)

// nodeName is every test node's name: static pod "web" runs as "web-e2e-node".
const nodeName = "e2e-node"

// plugin is one plugin block of the generated config; body goes inside its
// config { } block, verbatim, sha256, when set, pins the binary, and binary,
// when set, names it.
type plugin struct{ kind, name, body, sha256, binary string }

// defaultPlugins are the plugins a node runs unless a test says otherwise:
// every kind the build provides, with its default implementation.
func defaultPlugins() []plugin {
	plugins := []plugin{{kind: "cgroup", name: "default"}, {kind: "probes", name: "default"},
		{kind: "eviction", name: "kubelet"}, {kind: "imagegc", name: "lru"}}
	if _, err := os.Stat(filepath.Join(binDir, "microlet-stats-default")); err == nil {
		plugins = append(plugins, plugin{kind: "stats", name: "default"})
	}
	return plugins
}

// nodeOptions say how a test's node is set up.
type nodeOptions struct {
	// plugins are the plugin blocks; nil: defaultPlugins.
	plugins []plugin
	// settings are extra top-level lines of the config, verbatim
	// (`http_check_frequency = "1s"`, `plugin_host { restart_budget = 1 }`).
	settings []string
	// bridgeNetwork starts the node without the devnode's CNI network:
	// microlet writes one for pod_cidr (cni_bridge_config), on the
	// devnode's subnet so that parallel nodes never overlap.
	bridgeNetwork bool
	// registryCAs are registries the devnode's containerd trusts
	// (devnode.Options.RegistryCAs).
	registryCAs map[string]string
	// env are extra environment variables of the core ("NAME=value").
	env []string
}

// testNode is a private containerd plus the real microlet process on it.
type testNode struct {
	t   *testing.T
	dev *devnode.Node
	cri runtimeapi.RuntimeServiceClient

	// dir holds everything of the agent: its config, root dir, logs, static
	// pod manifests and the host paths tests mount into pods.
	dir                                 string
	configPath, manifestDir, rootDir    string
	pushSocket, healthzAddr, cgroupRoot string
	// readOnlyAddr is the node API's read-only port (/pods, /metrics).
	readOnlyAddr  string
	plugins       []plugin
	settings      []string
	bridgeNetwork bool
	env           []string

	// log is what every run of the core wrote (its plugins' lines included).
	log  *e2e.SyncBuffer
	core *e2e.Process
}

// startNode brings up a node for t: a devnode, a cgroup root of its own and
// microlet with a generated config, serving once it returns. Everything is
// stopped and removed when t ends, in this order: the core (by its pid;
// none of its plugin processes may be left), the devnode with every pod,
// the cgroup root, the files.
func startNode(t *testing.T, opts nodeOptions) *testNode {
	t.Helper()
	prereq.Root(t, "the node runs containerd and makes cgroups")
	n := &testNode{t: t, log: &e2e.SyncBuffer{}, plugins: opts.plugins, settings: opts.settings, bridgeNetwork: opts.bridgeNetwork, env: opts.env}
	if n.plugins == nil {
		n.plugins = defaultPlugins()
	}
	// Cleanups run last-registered first: the files go last.
	n.dir = e2e.ShortTempDir(t)
	n.configPath = filepath.Join(n.dir, "etc", "microlet.hcl")
	n.manifestDir = filepath.Join(n.dir, "manifests")
	n.rootDir = filepath.Join(n.dir, "root")
	n.pushSocket = filepath.Join(n.dir, "pods.sock")
	for _, d := range []string{filepath.Dir(n.configPath), n.manifestDir, n.hostPath("")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	n.cgroupRoot = devnode.CgroupT(t, "microlet-e2e")

	if n.bridgeNetwork {
		t.Cleanup(func() { removeBridgeNetwork(t) }) // after the devnode removed its pods
	}
	n.dev = devnode.StartT(t, devnode.Options{RegistryCAs: opts.registryCAs})
	n.cri = n.dev.RuntimeClient()
	if n.bridgeNetwork {
		files, err := filepath.Glob(filepath.Join(n.dev.CNIConfDir, "*.conflist"))
		if err != nil || len(files) == 0 {
			t.Fatalf("the devnode's CNI network config in %s: %v %v", n.dev.CNIConfDir, files, err)
		}
		for _, f := range files {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, addr := range []*string{&n.healthzAddr, &n.readOnlyAddr} {
		port, err := freeport.Port()
		if err != nil {
			t.Fatal(err)
		}
		*addr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	n.writeConfig()

	t.Cleanup(n.stop)
	n.startCore("")
	return n
}

// hostPath is a directory on the host for a pod's hostPath volume.
func (n *testNode) hostPath(name string) string {
	return filepath.Join(n.dir, "host", name)
}

// writeConfig writes the agent's config for the node's plugins, replacing
// the file by rename, as config management does: a running core reloads it.
func (n *testNode) writeConfig() {
	n.t.Helper()
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
		{"pod_push_socket", n.pushSocket},
		{"healthz_bind_address", "127.0.0.1"},
		{"cgroup_root", n.cgroupRoot},
	} {
		fmt.Fprintf(&b, "%s = %q\n", kv[0], kv[1])
	}
	fmt.Fprintf(&b, "cni_bin_dirs = [%q]\n", n.dev.CNIBinDir)
	if n.bridgeNetwork {
		fmt.Fprintf(&b, "cni_bridge_config = true\npod_cidr = %q\n", n.dev.Subnet)
	}
	fmt.Fprintf(&b, "healthz_port = %s\n", strings.TrimPrefix(n.healthzAddr, "127.0.0.1:"))
	// The node API: its read-only port on loopback for /pods and /metrics;
	// no secure port, which nodes running side by side would all want on
	// 10250.
	fmt.Fprintf(&b, "address = \"127.0.0.1\"\nport = 0\nread_only_port = %s\n", strings.TrimPrefix(n.readOnlyAddr, "127.0.0.1:"))
	for _, line := range n.settings {
		b.WriteString(line + "\n")
	}
	for _, p := range n.plugins {
		fmt.Fprintf(&b, "\nplugin %q %q {\n", p.kind, p.name)
		if p.sha256 != "" {
			fmt.Fprintf(&b, "  sha256 = %q\n", p.sha256)
		}
		if p.binary != "" {
			fmt.Fprintf(&b, "  binary = %q\n", p.binary)
		}
		fmt.Fprintf(&b, "  config {\n%s\n  }\n}\n", p.body)
	}
	writeFileAtomic(n.t, n.configPath, b.String())
}

// writeFileAtomic replaces path with content by renaming a dot file
// written beside it (the static pod source ignores dot files).
func writeFileAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		t.Fatal(err)
	}
}
