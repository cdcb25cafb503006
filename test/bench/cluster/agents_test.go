//go:build e2e

package clusterbench

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/microlet/microlet/internal/devcluster"
	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/e2e"
	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
	"github.com/microlet/microlet/test/testplugins/smaps"
)

// evictionHard (CLUSTER_BENCH_EVICTION_HARD, comma-separated, say
// "memory.available<100Mi,nodefs.available<5%,imagefs.available<5%")
// replaces both agents' hard eviction thresholds: on a shared machine
// whose disk is nearly full the defaults (imagefs.available<15%) put both
// nodes under DiskPressure, and every API pod is rejected. Unset: the
// agents' defaults.
var evictionHard = func() []string {
	if v := os.Getenv("CLUSTER_BENCH_EVICTION_HARD"); v != "" {
		return strings.Split(v, ",")
	}
	return nil
}()

// agent is a node agent joined to the benchmark's control plane, on a
// containerd of its own.
type agent struct {
	// name is the agent's ("microlet", "kubelet"), node its Node's.
	name, node string
	// processes are the agent's processes: microlet's core and plugins,
	// the kubelet.
	processes func() []int
}

// user is the API server's name for the agent's client.
func (a *agent) user() string { return "system:node:" + a.node }

// startMicrolet joins microlet, with its default plugins, as node name:
// a kubeconfig for the client certificate TLS bootstrap would issue, its
// node API on a loopback port (the end-to-end cluster suite's setup).
func startMicrolet(b *testing.B, c *devcluster.Cluster, name string) *agent {
	settings := pressuree2e.ClusterSettings(b, c, name, "127.0.0.1")
	opts := pressuree2e.Options{NodeName: name, Settings: settings, BinDir: b.TempDir()}
	names := []string{"microlet"}
	for _, p := range pressuree2e.DefaultPlugins() {
		names = append(names, "microlet-"+p.Kind+"-"+p.Name)
		if p.Kind == "eviction" && evictionHard != nil {
			quoted := make([]string, len(evictionHard))
			for i, t := range evictionHard {
				quoted[i] = strconv.Quote(t)
			}
			p.Body = "hard = [" + strings.Join(quoted, ", ") + "]"
		}
		opts.Plugins = append(opts.Plugins, p)
	}
	// As the kubelet's below, its binaries start out of the page cache;
	// and they are copies of its own (e2e.PrivateBinaries).
	if err := e2e.PrivateBinaries(pressuree2e.BinDir, opts.BinDir, names); err != nil {
		b.Fatal(err)
	}
	n := pressuree2e.Start(b, opts)
	return &agent{name: "microlet", node: name, processes: func() []int {
		pids := []int{n.CorePID()}
		for pid := range n.PluginProcesses() {
			pids = append(pids, pid)
		}
		return pids
	}}
}

// startKubelet joins the upstream kubelet (devnode.StartKubelet, its
// defaults but for what a devnode needs) as node name, with the same kind
// of kubeconfig and address as microlet's.
func startKubelet(b *testing.B, c *devcluster.Cluster, name string) *agent {
	kubeconfig, err := c.NodeKubeconfig(name)
	if err != nil {
		b.Fatal(err)
	}
	n := devnode.StartT(b)
	k := devnode.StartKubeletT(b, n, 10*time.Minute, devnode.KubeletOptions{
		Binary: devnode.ColdKubeletBinaryT(b),
		Args:   []string{"--kubeconfig=" + kubeconfig, "--hostname-override=" + name, "--node-ip=127.0.0.1"},
		Configure: func(c *kubeletconfig.KubeletConfiguration) {
			if evictionHard == nil {
				return
			}
			c.EvictionHard = map[string]string{}
			for _, t := range evictionHard {
				signal, value, _ := strings.Cut(t, "<")
				c.EvictionHard[signal] = value
			}
		},
	})
	b.Logf("kubelet: pid %d, log %s", k.PID, k.LogPath)
	return &agent{name: "kubelet", node: name, processes: func() []int { return []int{k.PID} }}
}

// memory is the proportional set size in KiB and its anonymous part
// (heap, stacks), as the node bench reports them.
type memory struct{ pssKB, anonKB int64 }

func (m memory) plus(o memory) memory { return memory{m.pssKB + o.pssKB, m.anonKB + o.anonKB} }

// usage is what an agent's processes use.
type usage struct {
	// byProcess is each process's memory by its command name (the core,
	// each plugin), to place a change in one of them.
	byProcess map[string]memory
	cpu       time.Duration
}

// total sums the processes' memory. PSS shares a page mapped by several
// processes among them, so the sum over a core and its plugins counts
// each page once.
func total(byProcess map[string]memory) memory {
	var t memory
	for _, m := range byProcess {
		t = t.plus(m)
	}
	return t
}

// readUsage reads the PSS (smaps.Rollup, as the node bench) and the CPU
// time of pids.
func readUsage(pids []int) (usage, error) {
	u := usage{byProcess: map[string]memory{}}
	for _, pid := range pids {
		p, err := procfs.NewProc(pid)
		if err != nil {
			return u, err
		}
		comm, err := p.Comm()
		if err != nil {
			return u, err
		}
		m, err := smaps.Rollup(strconv.Itoa(pid))
		if err != nil {
			return u, err
		}
		st, err := p.Stat()
		if err != nil {
			return u, err
		}
		u.byProcess[comm] = u.byProcess[comm].plus(memory{m.PssKB, m.AnonKB})
		u.cpu += time.Duration(st.CPUTime() * float64(time.Second))
	}
	return u, nil
}
