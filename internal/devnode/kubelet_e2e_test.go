//go:build e2e

package devnode

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/internal/prereq"
)

const sleeperManifest = `apiVersion: v1
kind: Pod
metadata:
  name: sleeper
  namespace: default
spec:
  containers:
  - name: sleeper
    image: localhost/busybox:1
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    volumeMounts:
    - name: scratch
      mountPath: /scratch
  volumes:
  - name: scratch
    emptyDir:
      medium: Memory
`

// runningContainer waits for a running container of that name on the node.
func runningContainer(ctx context.Context, t *testing.T, n *Node, name string) *runtimeapi.Container {
	t.Helper()
	filter := &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{"io.kubernetes.container.name": name},
	}
	for {
		resp, err := n.RuntimeClient().ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
		if err != nil {
			t.Fatalf("ListContainers: %v", err)
		}
		if len(resp.GetContainers()) > 0 {
			return resp.GetContainers()[0]
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no running container %s: %v", name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func TestUpstreamKubeletRunsStaticPod(t *testing.T) {
	t.Parallel()
	n := StartT(t)
	ctx := testContext(t)
	k, err := StartKubelet(ctx, n, KubeletOptions{})
	if errors.Is(err, ErrNoKubelet) {
		prereq.Missing(t, "%v", err)
	}
	if err != nil {
		t.Fatalf("StartKubelet: %v", err)
	}

	version, err := exec.Command(k.Binary, "--version").Output()
	if err != nil || !strings.HasPrefix(string(version), "Kubernetes v1.") {
		t.Errorf("kubelet --version: %q, %v; want Kubernetes v1.x", version, err)
	}

	if err := os.WriteFile(filepath.Join(k.ManifestDir, "sleeper.yaml"), []byte(sleeperManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	c := runningContainer(ctx, t, n, "sleeper")
	if c.GetImage().GetImage() == "" || c.GetLabels()["io.kubernetes.pod.namespace"] != "default" {
		t.Errorf("container %v does not look like the kubelet's sleeper", c)
	}

	// The kubelet's server answers on loopback, anonymously.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get("https://" + k.ServerAddress + "/pods")
	if err != nil {
		t.Fatalf("GET /pods: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"name":"sleeper`) {
		t.Errorf("GET /pods: %s %.300s; want the sleeper pod", resp.Status, body)
	}

	links, _ := filepath.Glob(filepath.Join(legacyContainerLogsDir, "sleeper-*_default_sleeper-*.log"))
	if len(links) == 0 {
		t.Error("the kubelet linked no log into " + legacyContainerLogsDir + ", so the check below would prove nothing")
	}
	// The memory-backed emptyDir is a tmpfs the kubelet mounted under its
	// root directory.
	if mounts, _ := mountsUnder([]string{k.RootDir}); len(mounts) == 0 {
		t.Error("nothing is mounted under the kubelet's root directory, so the check below would prove nothing")
	}
	cgroups, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}

	if err := k.Close(); err != nil {
		t.Fatalf("Kubelet.Close: %v", err)
	}
	if _, err := processStart(k.PID); err == nil {
		t.Errorf("kubelet pid %d still runs", k.PID)
	}
	list, err := n.RuntimeClient().ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(list.GetItems()) > 0 {
		t.Errorf("sandboxes after Close: %v, %v; want none", list.GetItems(), err)
	}
	if mounts, _ := mountsUnder([]string{k.RootDir}); len(mounts) > 0 {
		t.Errorf("still mounted: %v", mounts)
	}
	for _, p := range append(links, k.RootDir, filepath.Join(devicePluginDir, devicePluginSocket)) {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	for _, mp := range cgroups {
		if _, err := os.Stat(filepath.Join(mp, k.CgroupRoot)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s is still there (%v)", filepath.Join(mp, k.CgroupRoot), err)
		}
	}
}
