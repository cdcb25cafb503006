//go:build e2e

package clustere2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/internal/devnode"
	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// The kubectl suite: every kubectl command that reaches a node, run with
// the upstream kubectl as the cluster's admin through the API server to a
// microlet node, as a user runs it against a kubelet node
// (kubectl_logs_test.go, kubectl_stream_test.go, kubectl_node_test.go).

// kubectlRun is one kubectl invocation that may fail: its output apart,
// and its exit code.
type kubectlRun struct {
	Stdout, Stderr string
	Code           int
}

// kubectlOptions say how to run kubectl beyond its arguments.
type kubectlOptions struct {
	// Stdin is what kubectl reads; nil: nothing.
	Stdin io.Reader
	// Env is added to the environment (KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false).
	Env []string
	// Timeout bounds the run; default 2 minutes.
	Timeout time.Duration
}

// kubectlResult runs kubectl to its end and returns what it wrote and its
// exit code; only a failure to run it fails the test.
func kubectlResult(t testing.TB, o kubectlOptions, args ...string) kubectlRun {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	cmd := kubectlCommand(t, ctx, o.Env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("kubectl %s: still running after %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), o.Timeout, &stdout, &stderr)
	}
	return kubectlRun{Stdout: stdout.String(), Stderr: stderr.String(), Code: cmd.ProcessState.ExitCode()}
}

// startReading starts cmd with its stdout to read and its stderr kept.
func startReading(t testing.TB, cmd *exec.Cmd) (io.ReadCloser, *strings.Builder) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return out, stderr
}

// kubectlTTY runs kubectl under a pseudo-terminal (util-linux's script),
// as a user's -it session: input is typed into the terminal. script -e
// exits with kubectl's code; the terminal merges stdout and stderr.
func kubectlTTY(t testing.TB, env []string, input string, args ...string) kubectlRun {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatalf("no script(1) for a terminal: %v (Debian's bsdutils)", err)
	}
	line := shellQuote(kubectlArgs(t, args...))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "script", "-qefc", line, "/dev/null")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = &slowReader{data: []byte(input)}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) || ctx.Err() != nil {
		t.Fatalf("script kubectl %s: %v\n%s", strings.Join(args, " "), err, &out)
	}
	return kubectlRun{Stdout: out.String(), Code: cmd.ProcessState.ExitCode()}
}

// slowReader types its data after a pause, and then holds the terminal
// open a moment: a session's prompt comes before its input, and script
// ends the session when its input ends.
type slowReader struct {
	data []byte
	done bool
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.done {
		time.Sleep(2 * time.Second)
		return 0, io.EOF
	}
	time.Sleep(3 * time.Second)
	r.done = true
	return copy(p, r.data), nil
}

func shellQuote(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}

// protocols are the two streaming protocols kubectl speaks to the API
// server for exec, attach, cp and port-forward: WebSocket, its default
// since v1.31, and SPDY, which the environment forces back.
var protocols = []struct {
	name string
	env  []string
}{
	{"websocket", nil},
	{"spdy", []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false", "KUBECTL_PORT_FORWARD_WEBSOCKETS=false"}},
}

// kubectlPods are the pods the kubectl suite's commands work on.
const (
	// serverScript serves two ports with busybox httpd (one page each, and
	// 100 MB of random bytes with their sha256 on the first) and waits for
	// SIGTERM; its readiness probe passes once the big file is written.
	serverScript = `mkdir -p /www1 /www2; echo one > /www1/index.html; echo two > /www2/index.html
head -c 100000000 /dev/urandom > /www1/blob; sha256sum /www1/blob | cut -d' ' -f1 > /www1/blob.sha
httpd -p 8081 -h /www1; httpd -p 8082 -h /www2
trap 'exit 0' TERM; sleep 100000 & wait`
	// echoScript answers each line of its stdin (kubectl attach -i).
	echoScript = `while read l; do echo "got-$l"; done`
)

// serverPod is the pod exec, port-forward, cp and debug work on.
func serverPod(n *clusterNode) *v1.Pod {
	spec := apiPodSpec(n, v1.Container{
		Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", serverScript},
		Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("32Mi")}},
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"test", "-s", "/www1/blob.sha"}}},
			PeriodSeconds: 1},
	})
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "server"}, Spec: spec}
}

// attachPod's main process reads its stdin.
func attachPod(n *clusterNode) *v1.Pod {
	spec := apiPodSpec(n, v1.Container{Name: "echo", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", echoScript}, Stdin: true})
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "echo"}, Spec: spec}
}

// createPods creates pods in namespace ns and waits until each is Ready.
func createPods(t *testing.T, n *clusterNode, ns string, pods ...*v1.Pod) {
	t.Helper()
	for _, p := range pods {
		if _, err := cluster(t).Admin.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pods {
		waitAPIPod(t, n, ns, p.Name, "Ready", podReady)
	}
}

func podReady(p *v1.Pod) bool { return hasCondition(p, v1.PodReady) }

// TestKubectl runs every kubectl command that reaches the node against one
// microlet node, its cases in parallel. Logs rotate at 64 KiB, checked
// every 3 s, so that following a log crosses rotations. The node's address
// is the host's, not loopback: the API server's node proxy (kubectl get
// --raw .../proxy/...) refuses loopback addresses, for a kubelet as for
// microlet. It runs the probes plugin too, for /metrics/probes.
func TestKubectl(t *testing.T) {
	t.Parallel()
	ip := hostIP(t)
	n := startNode(t, nodeOptions{Settings: map[string]string{
		"container_log_max_size":         `"64Ki"`,
		"container_log_monitor_interval": `"3s"`,
		"address":                        quote(ip),
		"node_ip":                        quote(ip),
	}, Plugins: append(pressuree2e.DefaultPlugins(), pressuree2e.Plugin{Kind: "probes", Name: "default"})})
	n.Secure = strings.Replace(n.Secure, "127.0.0.1", ip, 1)
	waitReady(t, n, "")
	ns := testNamespace(t)
	createPods(t, n, ns, serverPod(n), attachPod(n))

	t.Run("logs", func(t *testing.T) { t.Parallel(); testLogs(t, n, ns) })
	t.Run("logs across rotation", func(t *testing.T) { t.Parallel(); testLogsAcrossRotation(t, n, ns) })
	t.Run("exec", func(t *testing.T) { t.Parallel(); testExec(t, ns) })
	t.Run("attach", func(t *testing.T) { t.Parallel(); testAttach(t, ns) })
	t.Run("port-forward", func(t *testing.T) { t.Parallel(); testPortForward(t, ns) })
	t.Run("cp", func(t *testing.T) { t.Parallel(); testCopy(t, ns) })
	t.Run("debug pod", func(t *testing.T) { t.Parallel(); testDebugPod(t, n, ns) })
	t.Run("debug node", func(t *testing.T) { t.Parallel(); testDebugNode(t, n) })
	t.Run("node proxy", func(t *testing.T) { t.Parallel(); testNodeProxy(t, n) })
	t.Run("node API identity", func(t *testing.T) { t.Parallel(); testNodeAPIIdentity(t, n) })
	t.Run("describe", func(t *testing.T) { t.Parallel(); testDescribe(t, n, ns) })
}

// hostIP is the host's address on its default route: a node address the
// API server may proxy to.
func hostIP(t testing.TB) string {
	t.Helper()
	conn, err := net.Dial("udp", "198.51.100.1:9") // nothing is sent
	if err != nil {
		t.Fatalf("no default route for a node address that is not loopback: %v", err)
	}
	defer conn.Close()
	return conn.LocalAddr().(*net.UDPAddr).IP.String()
}
