//go:build e2e

package nodebench

import (
	"fmt"
	"testing"
	"time"

	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/microlet/microlet/internal/devnode"
)

// system is one way of running pods on a node: the raw CRI floor, the
// upstream kubelet or microlet. Each runs on a devnode of its own.
type system interface {
	// devnode is the node the system runs on: the benchmark polls its CRI
	// and reads its containerd's CPU time.
	devnode() *devnode.Node
	// starter and stopper prepare what can be prepared before the clock
	// starts and return the timed action. Its channel reports errors of
	// work the action leaves running and is closed when that is done.
	starter(pods []benchPod) (func() <-chan error, error)
	stopper(pods []benchPod) (func() <-chan error, error)
	// processes are the agent's processes, whose memory and CPU time the
	// benchmark reads; the floor has none.
	processes() ([]int, error)
}

// kubeletStartTimeout bounds the wait for the host's one devnode kubelet
// slot and the kubelet's start.
const kubeletStartTimeout = 10 * time.Minute

// kubelet is the upstream kubelet v1.34 in standalone mode
// (devnode.StartKubelet), running the benchmark's pods as static pods.
type kubelet struct {
	manifestDir
	node *devnode.Node
	k    *devnode.Kubelet
}

func startKubelet(b *testing.B) system { return runKubelet(b, kubeletStartTimeout, nil) }

// runKubelet starts the kubelet on a node of its own, waiting at most
// timeout; configure, if set, changes its KubeletConfiguration.
func runKubelet(b *testing.B, timeout time.Duration, configure func(*kubeletconfig.KubeletConfiguration)) *kubelet {
	n := devnode.StartT(b)
	// Bounded: StartKubelet waits while another devnode kubelet runs on
	// the host (an end-to-end test, say).
	k := devnode.StartKubeletT(b, n, timeout, devnode.KubeletOptions{Binary: devnode.ColdKubeletBinaryT(b), Configure: configure})
	b.Logf("kubelet: pid %d, log %s", k.PID, k.LogPath)
	return &kubelet{manifestDir: manifestDir{dir: k.ManifestDir, image: n.PauseImage}, node: n, k: k}
}

func (k *kubelet) devnode() *devnode.Node { return k.node }

func (k *kubelet) processes() ([]int, error) {
	if !alive(k.k.PID) {
		return nil, fmt.Errorf("the kubelet (pid %d) is not running; its log is %s", k.k.PID, k.k.LogPath)
	}
	return []int{k.k.PID}, nil
}
