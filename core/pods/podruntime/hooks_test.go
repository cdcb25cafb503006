package podruntime

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeExec records commands and answers with a fixed response.
type fakeExec struct {
	resp *runtimeapi.ExecSyncResponse
	err  error
	got  []string
}

func (f *fakeExec) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	f.got = append(f.got, id+": "+strings.Join(cmd, " "))
	return f.resp, f.err
}

func TestHookRequest(t *testing.T) {
	c := &v1.Container{Name: "a", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	for _, tc := range []struct {
		name       string
		action     v1.HTTPGetAction
		podIPs     []string
		wantURL    string
		wantHeader http.Header
		wantHost   string
		wantErr    string
	}{
		{name: "defaults: http to the pod's primary IP", action: v1.HTTPGetAction{Path: "/start", Port: intstr.FromInt32(80)},
			podIPs: []string{"10.88.0.5", "fd00::5"}, wantURL: "http://10.88.0.5:80/start",
			wantHeader: http.Header{"User-Agent": {"kube-lifecycle/1.34"}, "Accept": {"*/*"}}},
		{name: "named port, IPv6 pod, query kept", action: v1.HTTPGetAction{Path: "/hook?x=1", Port: intstr.FromString("http")},
			podIPs: []string{"fd00::5"}, wantURL: "http://[fd00::5]:8080/hook?x=1",
			wantHeader: http.Header{"User-Agent": {"kube-lifecycle/1.34"}, "Accept": {"*/*"}}},
		{name: "numeric string port", action: v1.HTTPGetAction{Port: intstr.FromString("9000")}, podIPs: []string{"10.88.0.5"},
			wantURL: "http://10.88.0.5:9000", wantHeader: http.Header{"User-Agent": {"kube-lifecycle/1.34"}, "Accept": {"*/*"}}},
		{name: "explicit host, HTTPS, headers", action: v1.HTTPGetAction{Host: "127.0.0.1", Scheme: v1.URISchemeHTTPS, Path: "/x", Port: intstr.FromInt32(443),
			HTTPHeaders: []v1.HTTPHeader{{Name: "User-Agent", Value: "mine"}, {Name: "Accept", Value: ""}, {Name: "Host", Value: "svc.example"}, {Name: "X-A", Value: "1"}, {Name: "X-A", Value: "2"}}},
			wantURL: "https://127.0.0.1:443/x", wantHost: "svc.example",
			wantHeader: http.Header{"User-Agent": {"mine"}, "Host": {"svc.example"}, "X-A": {"1", "2"}}},
		{name: "no address", action: v1.HTTPGetAction{Port: intstr.FromInt32(80)}, wantErr: "the pod has no IP address"},
		{name: "unknown port name", action: v1.HTTPGetAction{Port: intstr.FromString("grpc")}, podIPs: []string{"10.88.0.5"},
			wantErr: `couldn't find port "grpc" among the ports of container "a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := hookRequest(context.Background(), &tc.action, c, tc.podIPs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("hookRequest error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.String() != tc.wantURL || req.Method != http.MethodGet || req.Host != tc.wantHost {
				t.Errorf("request %s %s (Host %q), want GET %s (Host %q)", req.Method, req.URL, req.Host, tc.wantURL, tc.wantHost)
			}
			if len(req.Header) != len(tc.wantHeader) {
				t.Errorf("headers %v, want %v", req.Header, tc.wantHeader)
			}
			for k, v := range tc.wantHeader {
				if strings.Join(req.Header[k], ",") != strings.Join(v, ",") {
					t.Errorf("header %s = %v, want %v", k, req.Header[k], v)
				}
			}
		})
	}
}

func TestHookExec(t *testing.T) {
	pod := testPod()
	c := &pod.Spec.Containers[0]
	handler := &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"touch", "/ready"}}}

	ok := &fakeExec{resp: &runtimeapi.ExecSyncResponse{}}
	if msg, err := (&hookRunner{exec: ok}).run(context.Background(), pod, c, "cid", handler, nil); err != nil || msg != "" {
		t.Errorf("successful exec hook: %q, %v", msg, err)
	}
	if len(ok.got) != 1 || ok.got[0] != "cid: touch /ready" {
		t.Errorf("exec calls %q", ok.got)
	}

	failing := &fakeExec{resp: &runtimeapi.ExecSyncResponse{ExitCode: 2, Stderr: []byte("read-only file system")}}
	msg, err := (&hookRunner{exec: failing}).run(context.Background(), pod, c, "cid", handler, nil)
	if err == nil || !strings.Contains(msg, `Exec lifecycle hook ([touch /ready]) for Container "a" in Pod "web_default(uid-1)" failed`) ||
		!strings.Contains(msg, "read-only file system") || !strings.Contains(err.Error(), "exited with 2") {
		t.Errorf("exec hook exiting 2: %q, %v", msg, err)
	}

	broken := &fakeExec{err: errors.New("container not running")}
	if _, err := (&hookRunner{exec: broken}).run(context.Background(), pod, c, "cid", handler, nil); err == nil {
		t.Error("an exec hook the runtime could not run succeeded")
	}
}

func TestHookHTTP(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path+" "+r.UserAgent())
		mu.Unlock()
		// As upstream, the status code does not matter.
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	host, portText, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portText)
	pod := testPod()
	c := &pod.Spec.Containers[0]
	h := newHookRunner(nil)

	handler := &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/started", Port: intstr.FromInt32(int32(port))}}
	if msg, err := h.run(context.Background(), pod, c, "cid", handler, []string{host}); err != nil {
		t.Fatalf("HTTP hook: %q, %v", msg, err)
	}
	// An HTTPS hook answered in plain HTTP is retried over HTTP.
	handler = &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/tls", Scheme: v1.URISchemeHTTPS, Host: host, Port: intstr.FromInt32(int32(port))}}
	if msg, err := h.run(context.Background(), pod, c, "cid", handler, nil); err != nil {
		t.Fatalf("HTTPS hook on an HTTP server: %q, %v", msg, err)
	}
	mu.Lock()
	got := strings.Join(paths, "; ")
	mu.Unlock()
	if got != "/started kube-lifecycle/1.34; /tls kube-lifecycle/1.34" {
		t.Errorf("server saw %q", got)
	}

	srv.Close()
	handler = &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/gone", Port: intstr.FromInt32(int32(port))}}
	msg, err := h.run(context.Background(), pod, c, "cid", handler, []string{host})
	if err == nil || !strings.Contains(msg, `HTTP lifecycle hook (/gone) for Container "a" in Pod "web_default(uid-1)" failed`) {
		t.Errorf("HTTP hook to a closed server: %q, %v", msg, err)
	}
}

func TestHookSleepAndInvalid(t *testing.T) {
	pod := testPod()
	c := &pod.Spec.Containers[0]
	h := &hookRunner{}
	if msg, err := h.run(context.Background(), pod, c, "cid", &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 0}}, nil); err != nil {
		t.Errorf("sleep 0: %q, %v", msg, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.run(ctx, pod, c, "cid", &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 3600}}, nil); err == nil ||
		!strings.Contains(err.Error(), "container terminated before sleep hook finished") {
		t.Errorf("sleep cut short: %v", err)
	}
	if msg, err := h.run(context.Background(), pod, c, "cid", &v1.LifecycleHandler{}, nil); err == nil || !strings.HasPrefix(msg, "Cannot run handler") {
		t.Errorf("empty handler: %q, %v", msg, err)
	}
}
