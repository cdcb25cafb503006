//go:build e2e

package devicese2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/microlet/microlet/internal/devnode"
)

// rdmaResource is what the Mellanox RDMA shared device plugin offers here:
// its resource, with no devices on a machine without a Mellanox NIC.
const rdmaResource = "rdma/hca_e2e"

// plugins_registry makes the Mellanox plugin register through the kubelet's
// plugin watcher, which the bridge does not serve, instead of kubelet.sock.
const pluginsRegistry = "/var/lib/kubelet/plugins_registry"

// After a crash of the core (SIGKILL) and its restart, every upstream-API
// device plugin registers again without being touched: upstream's sample
// plugin, which watches kubelet.sock, and a third party's, Mellanox's RDMA
// shared device plugin built from its own module, which registers again
// only when its own socket disappears. The kubelet's contract for the
// second is that it removes the stale sockets of the device plugin
// directory when it starts; a new pod then gets the sample plugin's device.
func TestDevicePluginsRegisterAgainAfterCoreRestart(t *testing.T) {
	tools, err := devnode.KubeToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	sample, rdma := filepath.Join(tools, "sample-device-plugin"), filepath.Join(tools, "k8s-rdma-shared-dp")
	for _, bin := range []string{sample, rdma} {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%s (make kube-tools builds it): %v", filepath.Base(bin), err)
		}
	}
	lockDevicePluginDir(t)
	if _, err := os.Stat(pluginsRegistry); err == nil {
		t.Fatalf("%s exists: the RDMA plugin would register through the plugin watcher, not kubelet.sock; remove it", pluginsRegistry)
	}
	n := startNode(t, "plugin \"devices\" \"kubernetes\" {}\n")
	waitForKubeletSocket(t)
	startSamplePlugin(t, sample)
	mellanox := startRDMAPlugin(t, n.dir, rdma)
	for _, r := range []string{sampleResource, rdmaResource} {
		n.eventually(r+" registered", func() (bool, string) { return n.registrations(r) == 1, n.metricLines("kubelet_device_plugin_") })
	}
	n.addPod("before", devicePod("before", sampleResource, 1))
	n.running("before")

	n.killCore()
	n.startCore()
	// Each plugin registers again on its own: the sample plugin once it
	// sees the new kubelet.sock, the Mellanox plugin once its socket is
	// gone (it looks every 5 s).
	for _, r := range []string{sampleResource, rdmaResource} {
		n.eventually(r+" registered with the restarted core", func() (bool, string) {
			return n.registrations(r) >= 1, n.metricLines("kubelet_device_plugin_")
		})
	}
	select {
	case <-mellanox.Exited():
		t.Fatalf("the RDMA plugin exited:\n%s", mellanox.log.String())
	default:
	}
	if !strings.Contains(mellanox.log.String(), "server endpoint not found") {
		t.Errorf("the RDMA plugin's log does not say it registered again because its socket went away:\n%s", mellanox.log.String())
	}
	n.addPod("after", devicePod("after", sampleResource, 1))
	n.running("after")
}

// startRDMAPlugin runs the Mellanox plugin as its DaemonSet would, with a
// config offering rdmaResource for Mellanox NICs (vendor 15b3) and a pci.ids
// of one line (it needs the file; Debian's pci.ids package is not
// installed), until the test ends; then it is stopped by its pid.
func startRDMAPlugin(t *testing.T, dir, binary string) *pluginProcess {
	t.Helper()
	config := filepath.Join(dir, "rdma-config.json")
	pciIDs := filepath.Join(dir, "pci.ids")
	name := strings.TrimPrefix(rdmaResource, "rdma/")
	if err := os.WriteFile(config, fmt.Appendf(nil, `{"periodicUpdateInterval": 0, "configList": [{"resourcePrefix": "rdma", "resourceName": %q, "rdmaHcaMax": 3, "selectors": {"vendors": ["15b3"]}}]}`, name), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pciIDs, []byte("15b3  Mellanox Technologies\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "-config-file", config)
	cmd.Env = append(os.Environ(), "PCIDB_PATH="+pciIDs)
	return runPlugin(t, "the RDMA plugin", cmd)
}

// registrations is kubelet_device_plugin_registration_total of resource on
// the running core's /metrics, 0 when absent.
func (n *testNode) registrations(resource string) float64 {
	prefix := fmt.Sprintf("kubelet_device_plugin_registration_total{resource_name=%q} ", resource)
	for _, line := range strings.Split(n.metricLines(prefix), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				n.t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

// metricLines are the lines of the core's /metrics (read-only port) that
// start with prefix, or why there are none.
func (n *testNode) metricLines(prefix string) string {
	resp, err := httpClient.Get("http://" + n.readOnlyAddr + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			out = append(out, sc.Text())
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}
