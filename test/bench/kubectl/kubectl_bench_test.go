//go:build e2e

// Package kubectlbench measures what a user waits for in kubectl's
// commands that reach a node, through a real control plane
// (internal/devcluster), against a microlet node and the upstream kubelet
// v1.34 joined to the same cluster, each on a devnode of its own, taking
// turns:
//
//   - kubectl exec pod -- true, the median of 50 round trips;
//   - kubectl logs of a 100 MB log, in MB/s (the best of 3);
//   - kubectl port-forward of 1 GiB over loopback, in MB/s (the best of 3).
//
// Run it with
//
//	make build && E2E_BIN_DIR=$PWD/_output/bin \
//	  go test -run '^$' -bench Kubectl -benchtime 1x -tags e2e -timeout 30m ./test/bench/kubectl/
//
// It needs root, and the control plane, kubectl and kubelet of
// hack/kube-tools/build.sh (.cache/kube/bin).
package kubectlbench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/microlet/microlet/internal/devcluster"
	"github.com/microlet/microlet/internal/devnode"
	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

const (
	execRuns   = 50
	streamRuns = 3
	logBytes   = 100 << 20
	pfBytes    = 1 << 30
	namespace  = "default"
)

func TestMain(m *testing.M) { os.Exit(pressuree2e.Main(m)) }

// system is one node agent joined to the cluster, and its pods.
type system struct {
	name, node string
	execs      []time.Duration
	logs, pf   []float64 // MB/s
}

func BenchmarkKubectl(b *testing.B) {
	c := devcluster.StartT(b)
	ctx := context.Background()
	if _, err := c.Admin.CoreV1().ServiceAccounts(namespace).Create(ctx,
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	kubeconfig, err := c.Kubeconfig("bench-admin", "system:masters")
	if err != nil {
		b.Fatal(err)
	}
	bin, err := devnode.KubeToolsDir()
	if err != nil {
		b.Fatal(err)
	}
	k := kubectl{bin: filepath.Join(bin, "kubectl"), kubeconfig: kubeconfig}

	systems := []*system{{name: "microlet", node: "bench-microlet"}, {name: "kubelet", node: "bench-kubelet"}}
	ip := hostIP(b)
	startMicrolet(b, c, systems[0].node, ip)
	startKubelet(b, c, systems[1].node, ip)
	for _, s := range systems {
		createPods(b, c, s.node)
	}
	for _, s := range systems {
		waitFor(b, "the pods of "+s.name+" running", func() bool {
			out, _ := k.run(nil, "get", "pods", "-l", "node="+s.node, "--no-headers")
			return strings.Count(out, "Running") == 3
		})
		waitFor(b, "the 100 MB log of "+s.name+" written", func() bool {
			out, _ := k.run(nil, "logs", "logs-"+s.node, "--tail=1")
			return out == "done\n"
		})
	}
	b.ResetTimer()
	for range b.N {
		for range execRuns {
			for _, s := range systems {
				start := time.Now()
				if out, err := k.run(nil, "exec", "exec-"+s.node, "--", "true"); err != nil {
					b.Fatalf("%s: kubectl exec: %v %s", s.name, err, out)
				}
				s.execs = append(s.execs, time.Since(start))
			}
		}
		for range streamRuns {
			for _, s := range systems {
				s.logs = append(s.logs, k.logsThroughput(b, "logs-"+s.node))
				s.pf = append(s.pf, k.portForwardThroughput(b, "pf-"+s.node))
			}
		}
	}
	b.StopTimer()
	fmt.Printf("\n%-9s %22s %22s %26s\n", "system", "exec p50 (50 runs)", "logs 100 MB (best)", "port-forward 1 GiB (best)")
	for _, s := range systems {
		slices.Sort(s.execs)
		fmt.Printf("%-9s %22s %17.1f MB/s %21.1f MB/s\n", s.name, s.execs[len(s.execs)/2].Round(time.Millisecond), slices.Max(s.logs), slices.Max(s.pf))
		b.ReportMetric(float64(s.execs[len(s.execs)/2].Milliseconds()), s.name+"-exec-p50-ms")
		b.ReportMetric(slices.Max(s.logs), s.name+"-logs-MB/s")
		b.ReportMetric(slices.Max(s.pf), s.name+"-port-forward-MB/s")
		fmt.Printf("  %s samples: logs %.1f, port-forward %.1f MB/s\n", s.name, s.logs, s.pf)
	}
}

// createPods makes node's three pods: one to exec into, one that logs 100
// MB then "done", one that sends 1 GiB of zeros to each connection on
// port 9000.
func createPods(b *testing.B, c *devcluster.Cluster, node string) {
	b.Helper()
	pods := map[string]string{
		"exec-": "trap 'exit 0' TERM; sleep 100000 & wait",
		"logs-": fmt.Sprintf("yes 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz | head -c %d; echo; echo done; "+
			"trap 'exit 0' TERM; sleep 100000 & wait", logBytes),
		"pf-": fmt.Sprintf("exec nc -ll -p 9000 -e head -c %d /dev/zero", pfBytes),
	}
	for prefix, script := range pods {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: prefix + node, Labels: map[string]string{"node": node}},
			Spec: v1.PodSpec{
				NodeName:                      node,
				AutomountServiceAccountToken:  ptr.To(false),
				TerminationGracePeriodSeconds: ptr.To[int64](2),
				Containers: []v1.Container{{Name: "app", Image: devnode.DefaultTestImage,
					ImagePullPolicy: v1.PullIfNotPresent, Command: []string{"sh", "-c", script}}},
			},
		}
		if _, err := c.Admin.CoreV1().Pods(namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// kubectl runs the upstream kubectl as the cluster's admin.
type kubectl struct{ bin, kubeconfig string }

func (k kubectl) command(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig", k.kubeconfig, "-n", namespace}, args...)...)
}

func (k kubectl) run(stdin io.Reader, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := k.command(ctx, args...)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// logsThroughput times kubectl logs of the pod's whole log to a pipe.
func (k kubectl) logsThroughput(b *testing.B, pod string) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := k.command(ctx, "logs", pod)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, out)
	if werr := cmd.Wait(); err != nil || werr != nil || n < logBytes {
		b.Fatalf("kubectl logs %s: %d bytes, %v %v", pod, n, err, werr)
	}
	return float64(n) / 1e6 / time.Since(start).Seconds()
}

var forwarding = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 9000`)

// portForwardThroughput reads 1 GiB through kubectl port-forward, timed
// from the connection to the last byte.
func (k kubectl) portForwardThroughput(b *testing.B, pod string) float64 {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := k.command(ctx, "port-forward", "--address", "127.0.0.1", "pod/"+pod, ":9000")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	scan := bufio.NewScanner(out)
	var port string
	for port == "" && scan.Scan() {
		if m := forwarding.FindStringSubmatch(scan.Text()); m != nil {
			port = m[1]
		}
	}
	if port == "" {
		b.Fatalf("kubectl port-forward %s: no local port", pod)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	start := time.Now()
	conn, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(conn, pfBytes))
	if n != pfBytes {
		b.Fatalf("kubectl port-forward %s: %d bytes of %d: %v", pod, n, pfBytes, err)
	}
	return float64(n) / 1e6 / time.Since(start).Seconds()
}

// waitFor polls cond every second for 3 minutes.
func waitFor(b *testing.B, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Second)
	}
}
