//go:build e2e

package nodeapie2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
)

// streamTimeout bounds one exec, attach or port-forward; reaching it is a
// failure, not a timing assertion.
const streamTimeout = time.Minute

// executors are client-go's two ways to run remote commands, as kubectl
// picks them: SPDY (POST) and WebSocket (GET, protocol v5).
var executors = []struct {
	name string
	new  func(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error)
}{
	{"SPDY", func(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
		return remotecommand.NewSPDYExecutor(cfg, http.MethodPost, u)
	}},
	{"WebSocket", func(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
		return remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, u.String())
	}},
}

// streamURL is an exec or attach URL of the secure port with the
// kubelet's query parameters.
func (n *apiNode) streamURL(t testing.TB, kind, pod, container string, cmd []string, stdin, tty bool) *url.URL {
	t.Helper()
	q := url.Values{v1.ExecStdoutParam: {"1"}}
	if !tty {
		q.Set(v1.ExecStderrParam, "1")
	}
	if stdin {
		q.Set(v1.ExecStdinParam, "1")
	}
	if tty {
		q.Set(v1.ExecTTYParam, "1")
	}
	q[v1.ExecCommandParam] = cmd
	u, err := url.Parse(fmt.Sprintf("%s/%s/%s/%s?%s", n.Secure, kind, PodPath(pod), container, q.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestExec runs commands in a container through client-go over SPDY and
// over WebSocket: output on both streams, stdin, a terminal, and a
// non-zero exit code.
func TestExec(t *testing.T) {
	n := startAPINode(t, nodeOptions{})
	n.RunPod("shell", map[string]string{"app": "sleep 100000"})
	cfg := n.RESTConfig(n.admin)
	for _, ex := range executors {
		t.Run(ex.name, func(t *testing.T) {
			run := func(cmd []string, stdin string, tty bool) (string, string, error) {
				t.Helper()
				executor, err := ex.new(cfg, n.streamURL(t, "exec", "shell", "app", cmd, stdin != "", tty))
				if err != nil {
					t.Fatal(err)
				}
				var stdout, stderr bytes.Buffer
				opts := remotecommand.StreamOptions{Stdout: &stdout, Tty: tty}
				if !tty {
					opts.Stderr = &stderr
				}
				if stdin != "" {
					opts.Stdin = strings.NewReader(stdin)
				}
				ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
				defer cancel()
				err = executor.StreamWithContext(ctx, opts)
				return stdout.String(), stderr.String(), err
			}

			if out, errOut, err := run([]string{"sh", "-c", "echo to-stdout; echo to-stderr >&2"}, "", false); err != nil ||
				out != "to-stdout\n" || errOut != "to-stderr\n" {
				t.Errorf("two streams: %q %q %v", out, errOut, err)
			}
			// stdin reaches the command, and its end (the v5 half-close over
			// WebSocket) ends it.
			if out, _, err := run([]string{"sh", "-c", "tr a-z A-Z"}, "shout\n", false); err != nil || out != "SHOUT\n" {
				t.Errorf("stdin: %q %v", out, err)
			}
			if out, _, err := run([]string{"tty"}, "", true); err != nil || !strings.HasPrefix(out, "/dev/pts/") {
				t.Errorf("terminal: %q %v", out, err)
			}
			_, _, err := run([]string{"sh", "-c", "exit 3"}, "", false)
			var exit exec.CodeExitError
			if !errors.As(err, &exit) || exit.ExitStatus() != 3 {
				t.Errorf("exit code: %v; want a CodeExitError with 3", err)
			}
			if _, _, err := run([]string{"no-such-command"}, "", false); err == nil {
				t.Error("a missing command succeeded")
			}
		})
	}

	// /run runs a command to its end.
	code, body := Do(t, n.Admin, http.MethodPost, n.Secure+"/run/"+PodPath("shell")+"/app?cmd=echo+ran+here", nil)
	if code != 200 || body != "ran here\n" {
		t.Errorf("POST /run: %d %q", code, body)
	}
	code, body = Do(t, n.Admin, http.MethodPost, n.Secure+"/run/"+PodPath("shell")+"/app?cmd=false", nil)
	if code != 500 || !strings.Contains(body, "command 'false' exited with 1") {
		t.Errorf("POST /run of a failing command: %d %q", code, body)
	}
}

// TestAttach attaches to a container's main process, which reads stdin,
// over SPDY and over WebSocket.
func TestAttach(t *testing.T) {
	n := startAPINode(t, nodeOptions{})
	n.Push(`apiVersion: v1
kind: Pod
metadata: {name: echo, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: IMAGE
    stdin: true
    command: ["sh", "-c", "while read line; do echo got:$line; done"]
`)
	n.WaitPod("echo", "every container runs", allRunning)
	cfg := n.RESTConfig(n.admin)
	for _, ex := range executors {
		t.Run(ex.name, func(t *testing.T) {
			executor, err := ex.new(cfg, n.streamURL(t, "attach", "echo", "app", nil, true, false))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
			defer cancel()
			in, stdin := io.Pipe()
			out := &lineWaiter{want: "got:" + ex.name, done: make(chan struct{})}
			result := make(chan error, 1)
			go func() {
				result <- executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in, Stdout: out, Stderr: io.Discard})
			}()
			fmt.Fprintf(stdin, "%s\n", ex.name)
			select {
			case <-out.done:
			case err := <-result:
				t.Fatalf("attach ended before the answer (%q): %v", out.String(), err)
			case <-ctx.Done():
				t.Fatalf("no answer through attach; got %q", out.String())
			}
			cancel() // detach
			<-result
		})
	}
}

// lineWaiter closes done once what was written holds want.
type lineWaiter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	done chan struct{}
	once sync.Once
}

func (w *lineWaiter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.done) })
	}
	return len(p), nil
}

func (w *lineWaiter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestPortForward forwards a local port to busybox httpd in a pod with
// client-go over SPDY and over WebSocket (SPDY tunnelled, as kubectl does),
// and speaks the kubelet's own WebSocket port-forward protocol.
func TestPortForward(t *testing.T) {
	n := startAPINode(t, nodeOptions{})
	n.RunPod("web", map[string]string{"httpd": "mkdir -p /www && echo hello-from-pod > /www/index.html && exec httpd -f -p 8080 -h /www"})
	cfg := n.RESTConfig(n.admin)
	target, err := url.Parse(n.Secure + "/portForward/" + PodPath("web"))
	if err != nil {
		t.Fatal(err)
	}
	dialers := map[string]func() (httpstream.Dialer, error){
		"SPDY": func() (httpstream.Dialer, error) {
			transport, upgrader, err := spdy.RoundTripperFor(cfg)
			if err != nil {
				return nil, err
			}
			return spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, target), nil
		},
		"WebSocket": func() (httpstream.Dialer, error) { return portforward.NewSPDYOverWebsocketDialer(target, cfg) },
	}
	for name, newDialer := range dialers {
		t.Run(name, func(t *testing.T) {
			dialer, err := newDialer()
			if err != nil {
				t.Fatal(err)
			}
			stop, ready := make(chan struct{}), make(chan struct{})
			fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- fw.ForwardPorts() }()
			defer func() {
				close(stop)
				<-done
			}()
			select {
			case <-ready:
			case err := <-done:
				t.Fatalf("port-forward ended: %v", err)
			case <-time.After(streamTimeout):
				t.Fatal("port-forward never got ready")
			}
			ports, err := fw.GetPorts()
			if err != nil || len(ports) != 1 {
				t.Fatalf("ports %v, %v", ports, err)
			}
			for range 2 { // two connections through one forward
				code, body := Do(t, &http.Client{Timeout: streamTimeout}, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", ports[0].Local), nil)
				if code != 200 || body != "hello-from-pod\n" {
					t.Errorf("through the forward: %d %q", code, body)
				}
			}
		})
	}

	t.Run("kubelet WebSocket protocol", func(t *testing.T) {
		u := strings.Replace(n.Secure, "https://", "wss://", 1) + "/portForward/" + PodPath("web") + "?port=8080"
		d := websocket.Dialer{TLSClientConfig: n.tlsConfig(n.admin), Subprotocols: []string{"v4.channel.k8s.io"}, HandshakeTimeout: streamTimeout}
		ws, resp, err := d.Dial(u, nil)
		if err != nil {
			t.Fatalf("dial: %v (%v)", err, resp)
		}
		defer ws.Close()
		ws.SetReadDeadline(time.Now().Add(streamTimeout))
		// Each channel (0 data, 1 error) first carries the port, little-endian.
		for range 2 {
			if _, msg, err := ws.ReadMessage(); err != nil || len(msg) != 3 || msg[1] != 8080%256 || msg[2] != 8080/256 {
				t.Fatalf("port announcement %v, %v", msg, err)
			}
		}
		if err := ws.WriteMessage(websocket.BinaryMessage, append([]byte{0}, "GET / HTTP/1.0\r\n\r\n"...)); err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for !strings.Contains(got.String(), "hello-from-pod") {
			_, msg, err := ws.ReadMessage()
			if err != nil {
				t.Fatalf("reading the answer (%q so far): %v", got.String(), err)
			}
			if len(msg) > 0 && msg[0] == 0 {
				got.Write(msg[1:])
			}
		}
	})
}
