//go:build e2e

package clustere2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/prereq"
)

// crictlManifest is the static pod both agents run: labels, an
// annotation, an init container, and a container with a port and a
// preStop hook, so that every label and annotation a kubelet puts on its
// sandboxes and containers has something to say.
var crictlManifest = fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: crictl
  namespace: default
  labels: {app: crictl, tier: test}
  annotations: {example.com/note: hello}
spec:
  terminationGracePeriodSeconds: 5
  initContainers:
  - {name: init, image: %[1]s, command: [sh, -c, "true"]}
  containers:
  - name: app
    image: %[1]s
    command: [sh, -c, "trap 'exit 0' TERM; sleep 100000 & wait"]
    ports: [{name: http, containerPort: 8080, protocol: TCP}]
    lifecycle: {preStop: {exec: {command: [sh, -c, "true"]}}}
`, devnode.DefaultTestImage)

// TestCrictlListsPods runs crictl (sigs.k8s.io/cri-tools, built by
// hack/tools/build.sh) on the containerd of a microlet node and on the
// containerd of an upstream kubelet v1.34.4 running the same static pod
// (standalone, on a devnode of its own): `crictl pods`, `crictl ps -a`,
// `crictl inspectp` and `crictl inspect` show the same sandbox and
// containers, with the same metadata, labels, annotations (the container
// hash included), log paths and mounts, once each agent's own names (the
// pod's name, its UID, the cgroup root) are taken out. A difference names
// the field and both values.
func TestCrictlListsPods(t *testing.T) {
	t.Parallel()
	crictl := clusterTool(t, "crictl")

	manifests := t.TempDir()
	writeFile(t, filepath.Join(manifests, "crictl.yaml"), crictlManifest)
	n := startNode(t, nodeOptions{Settings: map[string]string{"static_pod_path": quote(manifests), "file_check_frequency": `"1s"`}})

	kdev := devnode.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), kubeletWait)
	defer cancel()
	k, err := devnode.StartKubelet(ctx, kdev, devnode.KubeletOptions{})
	if errors.Is(err, devnode.ErrNoKubelet) {
		prereq.Missing(t, "%v", err)
	}
	if err != nil {
		t.Fatalf("StartKubelet: %v", err)
	}
	t.Cleanup(func() { _ = k.Close() }) // if the test stops before it is closed below
	writeFile(t, filepath.Join(k.ManifestDir, "crictl.yaml"), crictlManifest)

	theirs := crictlView(t, n.Node, crictl, kdev.Endpoint, k.CgroupRoot)
	// One kubelet runs on a host at a time: the next test's waits for it.
	if err := k.Close(); err != nil {
		t.Errorf("kubelet: %v", err)
	}
	mine := crictlView(t, n.Node, crictl, n.Dev.Endpoint, n.CgroupRoot)
	for _, key := range slices.Sorted(maps.Keys(theirs)) {
		if mine[key] != theirs[key] {
			t.Errorf("%s: microlet %q, the kubelet %q", key, mine[key], theirs[key])
		}
	}
	for _, key := range slices.Sorted(maps.Keys(mine)) {
		if _, ok := theirs[key]; !ok {
			t.Errorf("%s: microlet %q, the kubelet has none", key, mine[key])
		}
	}
	if t.Failed() {
		t.Logf("what crictl shows of microlet's pod:\n%s", dump(mine))
	}
}

// kubeletWait bounds the wait for the upstream kubelet: one devnode
// kubelet runs on a host at a time (devnode.StartKubelet waits for the
// host's lock), and other packages' tests and benchmarks run one too.
const kubeletWait = 10 * time.Minute

// crictlView waits until crictl on endpoint shows the pod running with
// its init container exited, and returns what it shows of them as flat
// key → value pairs, the agent's own names replaced by placeholders.
func crictlView(t *testing.T, n interface {
	Eventually(string, func() (bool, string))
}, crictl, endpoint, cgroupRoot string) map[string]string {
	t.Helper()
	config := filepath.Join(t.TempDir(), "crictl.yaml")
	writeFile(t, config, "") // not the host's /etc/crictl.yaml
	run := func(args ...string) (string, error) {
		stdout, stderr, err := runTool(t, crictl, append([]string{"--config", config,
			"--runtime-endpoint", endpoint, "--image-endpoint", endpoint, "--timeout", "10s"}, args...)...)
		if err != nil {
			return "", fmt.Errorf("%w: %s", err, stderr)
		}
		return stdout, nil
	}
	var sandbox crictlPod
	var containers []crictlContainer
	n.Eventually("crictl on "+endpoint+" shows the pod running and its init container exited", func() (bool, string) {
		out, err := run("pods", "--label", "app=crictl", "--state", "ready", "-o", "json")
		if err != nil {
			return false, err.Error()
		}
		var pods struct{ Items []crictlPod }
		if err := json.Unmarshal([]byte(out), &pods); err != nil || len(pods.Items) != 1 {
			return false, fmt.Sprintf("%v: %s", err, out)
		}
		sandbox = pods.Items[0]
		if out, err = run("ps", "-a", "--pod", sandbox.ID, "-o", "json"); err != nil {
			return false, err.Error()
		}
		var list struct{ Containers []crictlContainer }
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			return false, fmt.Sprintf("%v: %s", err, out)
		}
		containers = list.Containers
		states := map[string]string{}
		for _, c := range containers {
			states[c.Metadata.Name] = c.State
		}
		return states["init"] == "CONTAINER_EXITED" && states["app"] == "CONTAINER_RUNNING", fmt.Sprint(states)
	})

	names := strings.NewReplacer(sandbox.Metadata.UID, "<uid>", sandbox.Metadata.Name, "<pod>", cgroupRoot, "<cgroup-root>")
	view := map[string]string{}
	put := func(prefix string, v any) { flatten(view, prefix, v, names) }
	put("pod.metadata", sandbox.Metadata)
	put("pod.labels", sandbox.Labels)
	put("pod.annotations", sandbox.Annotations)
	put("pod.state", sandbox.State)
	inspectp, err := run("inspectp", "-o", "json", sandbox.ID)
	if err != nil {
		t.Fatal(err)
	}
	var sandboxInfo struct {
		Info struct{ Config map[string]any }
	}
	if err := json.Unmarshal([]byte(inspectp), &sandboxInfo); err != nil {
		t.Fatalf("crictl inspectp: %v: %s", err, inspectp)
	}
	cfg := sandboxInfo.Info.Config
	for _, key := range []string{"hostname", "port_mappings", "dns_config"} {
		put("inspectp.config."+key, cfg[key])
	}
	// Below each agent's own pod logs directory.
	if dir, ok := cfg["log_directory"].(string); ok {
		put("inspectp.config.log_directory.base", filepath.Base(dir))
	}
	if linux, ok := cfg["linux"].(map[string]any); ok {
		put("inspectp.config.linux.cgroup_parent", linux["cgroup_parent"])
		if sc, ok := linux["security_context"].(map[string]any); ok {
			put("inspectp.config.linux.security_context.namespace_options", sc["namespace_options"])
		}
	}
	for _, c := range containers {
		prefix := "container[" + c.Metadata.Name + "]"
		put(prefix+".metadata", c.Metadata)
		put(prefix+".state", c.State)
		put(prefix+".labels", c.Labels)
		put(prefix+".annotations", c.Annotations)
		inspect, err := run("inspect", "-o", "json", c.ID)
		if err != nil {
			t.Fatal(err)
		}
		var info struct {
			Status struct{ LogPath string }
			Info   struct {
				Config struct {
					LogPath string `json:"log_path"`
					Mounts  []struct {
						ContainerPath string `json:"container_path"`
						Readonly      bool   `json:"readonly"`
					}
				}
			}
		}
		if err := json.Unmarshal([]byte(inspect), &info); err != nil {
			t.Fatalf("crictl inspect: %v: %s", err, inspect)
		}
		put(prefix+".inspect.config.log_path", info.Info.Config.LogPath)
		var mounts []string
		for _, m := range info.Info.Config.Mounts {
			mounts = append(mounts, fmt.Sprintf("%s readonly=%v", m.ContainerPath, m.Readonly))
		}
		slices.Sort(mounts)
		put(prefix+".inspect.config.mounts", mounts)
	}
	return view
}

type crictlPod struct {
	ID       string `json:"id"`
	Metadata struct {
		Name, UID, Namespace string
		Attempt              int
	} `json:"metadata"`
	State       string            `json:"state"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type crictlContainer struct {
	ID       string `json:"id"`
	Metadata struct {
		Name    string
		Attempt int
	} `json:"metadata"`
	State       string            `json:"state"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// volatile are values that differ between any two runs of the same pod,
// kubelet or not: when the agent first saw it.
var volatile = map[string]bool{"pod.annotations.kubernetes.io/config.seen": true}

// flatten puts v into view as prefix.key = value leaves (JSON of the leaf),
// names replaced.
func flatten(view map[string]string, prefix string, v any, names *strings.Replacer) {
	b, err := json.Marshal(v)
	if err != nil {
		view[prefix] = err.Error()
		return
	}
	var generic any
	_ = json.Unmarshal(b, &generic)
	var walk func(string, any)
	walk = func(key string, v any) {
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			for k, x := range m {
				walk(key+"."+k, x)
			}
			return
		}
		if volatile[key] {
			view[key] = "<set>"
			return
		}
		leaf, _ := json.Marshal(v)
		view[key] = names.Replace(string(leaf))
	}
	walk(prefix, generic)
}

func dump(view map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(view)) {
		fmt.Fprintf(&b, "  %s = %s\n", k, view[k])
	}
	return b.String()
}
