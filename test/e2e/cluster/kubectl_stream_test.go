//go:build e2e

package clustere2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// testExec: kubectl exec over each protocol passes back stdout, stderr
// and the exit code; with -i it feeds stdin; with -it the command has a
// terminal.
func testExec(t *testing.T, ns string) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			r := kubectlResult(t, kubectlOptions{Env: p.env}, "exec", "-n", ns, "server", "-c", "app", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
			if r.Code != 3 || r.Stdout != "out\n" || !strings.Contains(r.Stderr, "err\n") {
				t.Errorf("kubectl exec -- sh -c 'echo out; echo err >&2; exit 3' = code %d, stdout %q, stderr %q; want 3, out, err",
					r.Code, r.Stdout, r.Stderr)
			}
			r = kubectlResult(t, kubectlOptions{Env: p.env}, "exec", "-n", ns, "server", "-c", "app", "--", "true")
			if r.Code != 0 || r.Stdout != "" {
				t.Errorf("kubectl exec -- true = code %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
			}
			r = kubectlResult(t, kubectlOptions{Env: p.env, Stdin: strings.NewReader("hello\nworld\n")},
				"exec", "-i", "-n", ns, "server", "-c", "app", "--", "sh", "-c", "cat; test -t 0 || echo no-tty")
			if r.Code != 0 || r.Stdout != "hello\nworld\nno-tty\n" {
				t.Errorf("kubectl exec -i -- cat = code %d, stdout %q, stderr %q; want stdin back and no terminal", r.Code, r.Stdout, r.Stderr)
			}
			r = kubectlTTY(t, p.env, "echo typed-$((6*7)); exit 4\n", "exec", "-it", "-n", ns, "server", "-c", "app", "--", "sh")
			if r.Code != 4 || !strings.Contains(r.Stdout, "typed-42") {
				t.Errorf("kubectl exec -it -- sh, typed 'echo typed-$((6*7)); exit 4' = code %d, output %q; want 4 and typed-42", r.Code, r.Stdout)
			}
			r = kubectlResult(t, kubectlOptions{Env: p.env}, "exec", "-n", ns, "server", "-c", "nosuch", "--", "true")
			if r.Code == 0 || !strings.Contains(r.Stderr, "nosuch") {
				t.Errorf("kubectl exec -c nosuch = code %d, stderr %q; want a failure naming the container", r.Code, r.Stderr)
			}
		})
	}
}

// testAttach: kubectl attach -i reaches the main process's stdin and reads
// its stdout, over each protocol.
func testAttach(t *testing.T, ns string) {
	for i, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := kubectlCommand(t, ctx, p.env, "attach", "-i", "-n", ns, "echo")
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, stderr := startReading(t, cmd)
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			want := fmt.Sprintf("got-hello-%d", i)
			// The first lines may be typed before the attach is through;
			// typing again until one comes back.
			go func() {
				for ctx.Err() == nil {
					fmt.Fprintf(in, "hello-%d\n", i)
					time.Sleep(time.Second)
				}
			}()
			scan := bufio.NewScanner(out)
			for scan.Scan() {
				if scan.Text() == want {
					return
				}
			}
			t.Fatalf("kubectl attach -i: no %q before its output ended: %v\n%s", want, scan.Err(), stderr.String())
		})
	}
}

var forwarding = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)`)

// testPortForward: kubectl port-forward of two ports at once, over each
// protocol, reaches each port's server, and 100 MB come through intact.
func testPortForward(t *testing.T, ns string) {
	want := strings.TrimSpace(kubectl(t, "exec", "-n", ns, "server", "-c", "app", "--", "cat", "/www1/blob.sha"))
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			ports, stop := portForward(t, p.env, "-n", ns, "pod/server", ":8081", ":8082")
			defer stop()
			for port, page := range map[string]string{"8081": "one\n", "8082": "two\n"} {
				if got := httpGet(t, ports[port], "/index.html", io.Discard); got != page {
					t.Errorf("port %s through kubectl port-forward: %q, want %q", port, got, page)
				}
			}
			sum := sha256.New()
			httpGet(t, ports["8081"], "/blob", sum)
			if got := hex.EncodeToString(sum.Sum(nil)); got != want {
				t.Errorf("100 MB through kubectl port-forward: sha256 %s, want %s", got, want)
			}
		})
	}
}

// portForward starts kubectl port-forward with args, whose ports are
// ":<remote>", and returns the local port of each remote one, and how to
// stop it.
func portForward(t testing.TB, env []string, args ...string) (map[string]string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := kubectlCommand(t, ctx, env, append([]string{"port-forward", "--address", "127.0.0.1"}, args...)...)
	out, stderr := startReading(t, cmd)
	stop := func() { cancel(); _ = cmd.Wait() }
	want := 0
	for _, a := range args {
		if strings.HasPrefix(a, ":") {
			want++
		}
	}
	ports := map[string]string{}
	scan := bufio.NewScanner(out)
	for len(ports) < want && scan.Scan() {
		if m := forwarding.FindStringSubmatch(scan.Text()); m != nil {
			ports[m[2]] = m[1]
		}
	}
	if len(ports) < want {
		stop()
		t.Fatalf("kubectl port-forward %s: forwards %v: %v\n%s", strings.Join(args, " "), ports, scan.Err(), stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return ports, stop
}

// httpGet GETs path on a local port; the body goes to sink, and, when it
// is small, is returned.
func httpGet(t testing.TB, port, path string, sink io.Writer) string {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + port + path)
	if err != nil {
		t.Fatalf("GET %s through port %s: %v", path, port, err)
	}
	defer resp.Body.Close()
	var small strings.Builder
	if _, err := io.Copy(io.MultiWriter(sink, &limited{&small, 4096}), resp.Body); err != nil {
		t.Fatalf("GET %s through port %s: %v", path, port, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s through port %s: %s", path, port, resp.Status)
	}
	return small.String()
}

// limited keeps the first n bytes written to it.
type limited struct {
	w io.Writer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(l.n, len(p))
		l.n -= k
		_, _ = l.w.Write(p[:k])
	}
	return len(p), nil
}

// testCopy: kubectl cp of a file into the container and of another out of
// it, over each protocol (cp is tar through exec).
func testCopy(t *testing.T, ns string) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			dir := t.TempDir()
			data := make([]byte, 3<<20)
			_, _ = rand.Read(data)
			local := filepath.Join(dir, "up.bin")
			if err := os.WriteFile(local, data, 0o644); err != nil {
				t.Fatal(err)
			}
			remote := "/tmp/up-" + p.name
			if r := kubectlResult(t, kubectlOptions{Env: p.env}, "cp", "-c", "app", local, ns+"/server:"+remote); r.Code != 0 {
				t.Fatalf("kubectl cp into the pod: %d %s%s", r.Code, r.Stdout, r.Stderr)
			}
			sum := sha256.Sum256(data)
			got := kubectl(t, "exec", "-n", ns, "server", "-c", "app", "--", "sha256sum", remote)
			if !strings.HasPrefix(got, hex.EncodeToString(sum[:])) {
				t.Errorf("after kubectl cp in: sha256sum in the pod %q, want %x", got, sum)
			}
			back := filepath.Join(dir, "back.bin")
			if r := kubectlResult(t, kubectlOptions{Env: p.env}, "cp", "-c", "app", ns+"/server:"+remote, back); r.Code != 0 {
				t.Fatalf("kubectl cp out of the pod: %d %s%s", r.Code, r.Stdout, r.Stderr)
			}
			if copied, err := os.ReadFile(back); err != nil || sha256.Sum256(copied) != sum {
				t.Errorf("kubectl cp out of the pod: %d bytes (%v), not the %d bytes copied in", len(copied), err, len(data))
			}
		})
	}
}
