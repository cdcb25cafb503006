package podsource

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/pods/podspec"
)

// pushFixture is a running push source and clients for its socket and its
// loopback TCP address.
type pushFixture struct {
	push   *Push
	out    chan Update
	unix   *http.Client
	tcpURL string
	stop   func()
}

func startPush(t *testing.T, cfg PushConfig) *pushFixture {
	t.Helper()
	p, err := NewPush(cfg, testLogger(&logBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	f := &pushFixture{push: p, out: make(chan Update)}
	f.unix = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", cfg.SocketPath)
		},
	}}
	if cfg.TCPAddress != "" {
		f.tcpURL = "http://" + p.listeners[1].Addr().String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		p.Run(ctx, f.out)
		close(done)
	}()
	f.stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(f.stop)
	return f
}

// do sends a request and, unless the source is expected to send nothing,
// reads the update the request caused while the handler waits on it.
func (f *pushFixture) do(t *testing.T, method, path, body string) (int, []byte, *Update) {
	t.Helper()
	req, err := http.NewRequest(method, "http://push"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := f.unix.Do(req)
		done <- result{resp, err}
	}()
	var update *Update
	var r result
	select {
	case u := <-f.out:
		update = &u
		r = <-done
	case r = <-done:
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.resp.Body.Close()
	data, err := io.ReadAll(r.resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return r.resp.StatusCode, data, update
}

func decodeStatus(t *testing.T, data []byte) metav1.Status {
	t.Helper()
	var s metav1.Status
	if err := json.Unmarshal(data, &s); err != nil || s.Kind != "Status" {
		t.Fatalf("not a Status (%v): %s", err, data)
	}
	return s
}

func decodeList(t *testing.T, data []byte) []*v1.Pod {
	t.Helper()
	var list v1.PodList
	if err := json.Unmarshal(data, &list); err != nil || list.Kind != "PodList" {
		t.Fatalf("not a PodList (%v): %s", err, data)
	}
	pods := make([]*v1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return pods
}

func TestPushSource(t *testing.T) {
	dir := t.TempDir()
	cfg := PushConfig{
		SocketPath: filepath.Join(dir, "pods.sock"),
		TCPAddress: "127.0.0.1:0",
		StatePath:  filepath.Join(dir, "pushed-pods.json"),
		NodeName:   "node1",
	}
	f := startPush(t, cfg)
	if u := next(t, f.out); u.Source != PushSource || u.Op != OpSet || len(u.Pods) != 0 {
		t.Fatalf("first update %s %s [%s]; want an empty SET", u.Source, u.Op, names(u.Pods))
	}
	info, err := os.Stat(cfg.SocketPath)
	if err != nil || info.Mode().Type() != fs.ModeSocket || info.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v, %v; want a socket with mode 0600", info.Mode(), err)
	}

	code, body, u := f.do(t, http.MethodPost, "/pods", manifest("web", "x:1"))
	if code != http.StatusOK || u == nil || names(u.Pods) != "default/web-node1" {
		t.Fatalf("POST a pod: %d %s, update %v", code, body, u)
	}
	if got := decodeList(t, body); names(got) != "default/web-node1" || got[0].UID != u.Pods[0].UID {
		t.Errorf("POST answered %s", body)
	}
	web := u.Pods[0]

	list := "apiVersion: v1\nkind: PodList\nitems:\n" +
		"- metadata: {name: db}\n  spec: {containers: [{name: c, image: 'x:1'}]}\n" +
		"- metadata: {name: cache}\n  spec: {containers: [{name: c}]}\n" +
		"- metadata: {name: db}\n  spec: {containers: [{name: c, image: 'x:2'}]}\n"
	code, body, u = f.do(t, http.MethodPost, "/pods", list)
	if code != http.StatusBadRequest || u == nil || names(u.Pods) != "default/db-node1,default/web-node1" {
		t.Fatalf("POST a list with bad pods: %d %s, update %v", code, body, u)
	}
	status := decodeStatus(t, body)
	wantCauses := []metav1.StatusCause{
		{Type: metav1.CauseTypeFieldValueRequired, Field: "items[1].spec.containers[0].image", Message: "Required value"},
		{Type: metav1.CauseTypeFieldValueDuplicate, Field: "items[2].metadata.name", Message: `Duplicate value: "db": the request names this pod twice`},
	}
	if status.Reason != metav1.StatusReasonInvalid || status.Details == nil || !equalCauses(status.Details.Causes, wantCauses) {
		t.Errorf("status %+v; want causes %+v", status, wantCauses)
	}
	if !strings.Contains(status.Message, "default/cache: line 7: items[1].spec.containers[0].image: Required value") ||
		!strings.Contains(status.Message, "Applied: default/db") {
		t.Errorf("message %q does not say what was rejected where and what was applied", status.Message)
	}

	// GET over the loopback TCP address.
	resp, err := http.Get(f.tcpURL + "/pods")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := decodeList(t, data); names(got) != "default/db-node1,default/web-node1" {
		t.Errorf("GET over TCP: %s", data)
	}

	code, body, u = f.do(t, http.MethodPut, "/pods", manifest("web", "x:2"))
	if code != http.StatusBadRequest || u != nil || !strings.Contains(string(body), "takes a PodList") {
		t.Errorf("PUT a single pod: %d %s, update %v", code, body, u)
	}

	// Replace the set; the broken new version of web keeps the old one.
	replace := "apiVersion: v1\nkind: PodList\nitems:\n" +
		"- metadata: {name: web}\n  spec: {containers: [{name: c, image: 'x:2'}], restartPolicy: Sometimes}\n" +
		"- metadata: {name: api}\n  spec: {containers: [{name: c, image: 'x:1'}]}\n"
	code, body, u = f.do(t, http.MethodPut, "/pods", replace)
	if code != http.StatusBadRequest || u == nil || names(u.Pods) != "default/api-node1,default/web-node1" || u.Pods[1].UID != web.UID {
		t.Fatalf("PUT: %d %s, update %v", code, body, u)
	}

	for _, path := range []string{"/pods/default/api", "/pods/default/web-node1"} {
		code, body, u = f.do(t, http.MethodDelete, path, "")
		if code != http.StatusOK || u == nil {
			t.Fatalf("DELETE %s: %d %s", path, code, body)
		}
	}
	if len(u.Pods) != 0 {
		t.Errorf("pods left after deleting both: [%s]", names(u.Pods))
	}
	code, body, u = f.do(t, http.MethodDelete, "/pods/default/web", "")
	if s := decodeStatus(t, body); code != http.StatusNotFound || u != nil || s.Reason != metav1.StatusReasonNotFound {
		t.Errorf("DELETE of an absent pod: %d %s", code, body)
	}

	code, body, u = f.do(t, http.MethodPost, "/pods", "kind: Pod\napiVersion: v1\nmetadata:\n  name: a\n annotations: {}\n")
	if s := decodeStatus(t, body); code != http.StatusBadRequest || u != nil || !strings.Contains(s.Message, "line 5: invalid YAML") {
		t.Errorf("POST of broken YAML: %d %s", code, body)
	}
	code, body, u = f.do(t, http.MethodPost, "/pods", strings.Repeat(" ", podspec.MaxManifestBytes+1))
	if code != http.StatusRequestEntityTooLarge || u != nil {
		t.Errorf("POST over 10 MiB: %d %s", code, body)
	}
}

func TestPushSourceKeepsPodsAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	cfg := PushConfig{SocketPath: filepath.Join(dir, "pods.sock"), StatePath: filepath.Join(dir, "state", "pushed-pods.json"), NodeName: "node1"}
	if err := os.Mkdir(filepath.Dir(cfg.StatePath), 0o700); err != nil {
		t.Fatal(err)
	}
	f := startPush(t, cfg)
	next(t, f.out)
	_, body, u := f.do(t, http.MethodPost, "/pods", manifest("web", "x:1"))
	if u == nil {
		t.Fatalf("POST: %s", body)
	}
	before := u.Pods
	f.stop()
	if _, err := os.Stat(cfg.SocketPath); !os.IsNotExist(err) {
		t.Errorf("socket left behind after Run returned: %v", err)
	}

	f = startPush(t, cfg)
	after := next(t, f.out).Pods
	if names(after) != names(before) || after[0].UID != before[0].UID {
		t.Errorf("after a restart: [%s] %s; want [%s] %s", names(after), after[0].UID, names(before), before[0].UID)
	}
}

func TestNewPushValidatesConfig(t *testing.T) {
	dir := t.TempDir()
	notSocket := filepath.Join(dir, "file")
	if err := os.WriteFile(notSocket, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "corrupt.json")
	if err := os.WriteFile(corrupt, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  PushConfig
		want string
	}{
		{"relative socket", PushConfig{SocketPath: "pods.sock", NodeName: "n"}, "expected an absolute path"},
		{"no node name", PushConfig{SocketPath: filepath.Join(dir, "a.sock")}, "the node name is required"},
		{"non-loopback TCP", PushConfig{SocketPath: filepath.Join(dir, "b.sock"), TCPAddress: "0.0.0.0:10260", NodeName: "n"}, "only a loopback address"},
		{"a file in the way", PushConfig{SocketPath: notSocket, NodeName: "n"}, "the path exists and is not a socket"},
		{"corrupt state", PushConfig{SocketPath: filepath.Join(dir, "c.sock"), StatePath: corrupt, NodeName: "n"}, "remove the file to start without them"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPush(tt.cfg, testLogger(&logBuffer{}))
			if err == nil {
				p.closeListeners()
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q; want %q", err, tt.want)
			}
		})
	}
	// A failed start leaves no socket behind.
	if _, err := os.Stat(filepath.Join(dir, "b.sock")); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
}

func equalCauses(got, want []metav1.StatusCause) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}
