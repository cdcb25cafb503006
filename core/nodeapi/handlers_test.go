package nodeapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/config"
)

func TestPods(t *testing.T) {
	pods := fakePods{webPod()}
	rec := testHandlers(t, pods, &fakeRuntime{}, nil).do(t, "GET", "/pods", nil)
	if ct := rec.Header().Get("Content-Type"); rec.Code != 200 || ct != "application/json" {
		t.Fatalf("GET /pods: %d, content type %q", rec.Code, ct)
	}
	var list v1.PodList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "PodList" || list.APIVersion != "v1" || len(list.Items) != 1 || list.Items[0].Name != "web" ||
		list.Items[0].Kind != "Pod" || list.Items[0].Status.Phase != v1.PodRunning {
		t.Errorf("list: %+v", list)
	}
	if pods[0].Kind != "" {
		t.Error("the handler modified the pods it was given")
	}
	rec = testHandlers(t, nil, &fakeRuntime{}, nil).do(t, "GET", "/pods", nil)
	if !strings.Contains(rec.Body.String(), `"items":[]`) {
		t.Errorf("no pods: %s; want an empty items list, not null", rec.Body.String())
	}
}

func TestRunningPods(t *testing.T) {
	web, other := webPod(), &v1.Pod{}
	other.Name, other.Namespace, other.UID = "batch", "jobs", "uid-batch"
	rt := &fakeRuntime{
		sandboxes: []*runtimeapi.PodSandbox{
			{Id: "s1", State: runtimeapi.PodSandboxState_SANDBOX_READY, Labels: podLabels(web, "")},
			{Id: "s2", State: runtimeapi.PodSandboxState_SANDBOX_READY, Labels: podLabels(other, "")},
			{Id: "s0", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, Labels: map[string]string{"io.kubernetes.pod.uid": "gone"}},
			{Id: "foreign", State: runtimeapi.PodSandboxState_SANDBOX_READY},
		},
		containers: []*runtimeapi.Container{
			{Id: "c2", State: runtimeapi.ContainerState_CONTAINER_RUNNING, Labels: podLabels(web, "app"),
				Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}},
			{Id: "c1", State: runtimeapi.ContainerState_CONTAINER_EXITED, Labels: podLabels(web, "app"),
				Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}},
		},
	}
	rec := testHandlers(t, nil, rt, nil).do(t, "GET", "/runningpods/", nil)
	var list v1.PodList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || rec.Code != 200 {
		t.Fatalf("GET /runningpods/: %d %v", rec.Code, err)
	}
	var got []string
	for _, p := range list.Items {
		entry := p.Namespace + "/" + p.Name + "/" + string(p.UID)
		for _, c := range p.Spec.Containers {
			entry += " " + c.Name + "=" + c.Image
		}
		got = append(got, entry)
	}
	want := []string{"default/web/uid-web app=busybox", "jobs/batch/uid-batch"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("running pods %q, want %q", got, want)
	}
	if rec := testHandlers(t, nil, rt, nil).do(t, "GET", "/runningpods", nil); rec.Code/100 != 3 || rec.Header().Get("Location") != "/runningpods/" {
		t.Errorf("GET /runningpods: %d, want a redirect to /runningpods/", rec.Code)
	}
}

func TestSpec(t *testing.T) {
	rec := testHandlers(t, nil, &fakeRuntime{}, nil).do(t, "GET", "/spec/", nil)
	var spec map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &spec); err != nil || rec.Code != 200 {
		t.Fatalf("GET /spec/: %d %v", rec.Code, err)
	}
	for _, key := range []string{"timestamp", "vendor_id", "num_cores", "num_physical_cores", "num_sockets", "cpu_frequency_khz",
		"memory_capacity", "swap_capacity", "memory_by_type", "nvm", "hugepages", "machine_id", "system_uuid", "boot_id",
		"filesystems", "disk_map", "network_devices", "topology", "cloud_provider", "instance_type", "instance_id"} {
		if _, ok := spec[key]; !ok {
			t.Errorf("/spec/ lacks cAdvisor's %q", key)
		}
	}
	if spec["num_cores"] != float64(2) || spec["memory_capacity"] != float64(1<<30) {
		t.Errorf("num_cores %v memory_capacity %v; want the machine's capacity (2, 1Gi)", spec["num_cores"], spec["memory_capacity"])
	}
}

func TestConfigz(t *testing.T) {
	h := testHandlers(t, nil, &fakeRuntime{}, func(c *config.Config) {
		c.StaticPodURL = "https://user:hunter2@pods.example/list"
		c.StaticPodURLHeader = map[string][]string{"Authorization": {"Bearer secret-token"}, "X-Node": {"n1"}}
		c.Authorization.Mode = "AlwaysAllow"
	})
	rec := h.do(t, "GET", "/configz", nil)
	if strings.Contains(rec.Body.String(), "hunter2") || strings.Contains(rec.Body.String(), "secret-token") {
		t.Fatalf("/configz shows a secret: %s", rec.Body.String())
	}
	var body struct {
		Kubelet  map[string]any `json:"kubeletconfig"`
		Microlet map[string]any `json:"microlet"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != 200 {
		t.Fatalf("GET /configz: %d %v", rec.Code, err)
	}
	kc := body.Kubelet
	if kc["port"] != float64(10250) || kc["syncFrequency"] != "1m0s" || kc["enableDebuggingHandlers"] != true ||
		kc["enableProfilingHandler"] != true || kc["enableDebugFlagsHandler"] != true ||
		kc["authorization"].(map[string]any)["mode"] != "AlwaysAllow" || kc["staticPodURL"] != "https://user:xxxxx@pods.example/list" {
		t.Errorf("kubeletconfig %v", kc)
	}
	if _, ok := kc["evictionHard"]; ok {
		t.Error("kubeletconfig shows a setting microlet does not have")
	}
	for key := range kc {
		if !slices.Contains(sharedKubeletKeys, key) {
			t.Errorf("kubeletconfig shows %q, which microlet does not share", key)
		}
	}
	if body.Microlet["node_log_dir"] != "/var/log" || body.Microlet["plugin_host"] == nil {
		t.Errorf("microlet %v", body.Microlet)
	}
}

func TestNodeLogs(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "shadow")
	for path, content := range map[string]string{"syslog": "boot\n", "app/app.log": "hello\n", outside: "root:x:0:0\n"} {
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(outside, filepath.Join(dir, "planted"))
	os.Symlink("/", filepath.Join(dir, "root"))
	os.Symlink("syslog", filepath.Join(dir, "syslog.link"))
	h := testHandlers(t, nil, &fakeRuntime{}, func(c *config.Config) { c.NodeLogDir = dir })

	for _, tc := range []struct {
		target string
		code   int
		body   string
	}{
		{"/logs/syslog", 200, "boot"},
		{"/logs/app/app.log", 200, "hello"},
		{"/logs/", 200, `<a href="syslog">syslog</a>`},
		{"/logs/app/", 200, "app.log"},
		{"/logs/syslog.link", 200, "boot"},
		{"/logs/missing", 404, ""},
		{"/logs/../../etc/passwd", http.StatusTemporaryRedirect, ""}, // cleaned by the router; the clean path is authorized anew
		{"/logs/planted", 403, ""},
		{"/logs/root/etc/passwd", 403, ""},
	} {
		rec := h.do(t, "GET", tc.target, nil)
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("GET %s = %d %q, want %d with %q", tc.target, rec.Code, rec.Body.String(), tc.code, tc.body)
		}
		if strings.Contains(rec.Body.String(), "root:x") {
			t.Errorf("GET %s leaked a file outside the log directory", tc.target)
		}
	}
}

func TestRun(t *testing.T) {
	web := webPod()
	rt := &fakeRuntime{
		containers: []*runtimeapi.Container{{Id: "c2", State: runtimeapi.ContainerState_CONTAINER_RUNNING, Labels: podLabels(web, "app")}},
		exec:       &runtimeapi.ExecSyncResponse{Stdout: []byte("out\n"), Stderr: []byte("err\n")},
	}
	h := testHandlers(t, fakePods{web}, rt, nil)
	assertResponse(t, h.do(t, "POST", "/run/default/web/app?cmd=echo+a+b", nil), 200, "out\nerr\n")
	if !reflect.DeepEqual(rt.execSyncCmd, []string{"echo", "a", "b"}) {
		t.Errorf("ran %q, want the command split at spaces", rt.execSyncCmd)
	}
	assertResponse(t, h.do(t, "POST", "/run/default/web/uid-web/app?cmd=true", nil), 200, "out")
	rt.exec = &runtimeapi.ExecSyncResponse{ExitCode: 3, Stderr: []byte("boom")}
	assertResponse(t, h.do(t, "POST", "/run/default/web/app?cmd=false", nil), 500, "command 'false' exited with 3: boom")
	assertResponse(t, h.do(t, "POST", "/run/default/nope/app?cmd=true", nil), 404, "pod does not exist")
	assertResponse(t, h.do(t, "POST", "/run/default/web/sidecar?cmd=true", nil), 500, `container not found ("sidecar")`)
	assertResponse(t, h.do(t, "GET", "/run/default/web/app?cmd=true", nil), 405, "")
}

func TestStreamingErrors(t *testing.T) {
	web := webPod()
	rt := &fakeRuntime{
		sandboxes:  []*runtimeapi.PodSandbox{{Id: "s1", State: runtimeapi.PodSandboxState_SANDBOX_READY, Labels: podLabels(web, "")}},
		containers: []*runtimeapi.Container{{Id: "c2", State: runtimeapi.ContainerState_CONTAINER_RUNNING, Labels: podLabels(web, "app")}},
		streamURL:  "http://127.0.0.1:1/exec/token",
	}
	h := testHandlers(t, fakePods{web}, rt, nil)
	websocket := func(target string) *http.Request {
		r, _ := http.NewRequest("GET", target, nil)
		r.Header.Set("Connection", "Upgrade")
		r.Header.Set("Upgrade", "websocket")
		return r
	}
	for _, tc := range []struct {
		method, target string
		code           int
		body           string
	}{
		{"POST", "/exec/default/web/app?command=sh", 400, "you must specify at least 1 of stdin, stdout, stderr"},
		{"POST", "/exec/default/nope/app?command=sh&output=1", 404, "pod does not exist"},
		{"POST", "/exec/default/web/nope?command=sh&output=1", 500, `container not found ("nope")`},
		{"POST", "/attach/default/web/app", 400, "you must specify at least 1"},
		// The runtime stream exists: a request that is no upgrade is refused.
		{"POST", "/exec/default/web/app?command=sh&output=1", 500, "Upgrade request required"}, // upstream answers 500 too
		{"POST", "/portForward/default/nope", 404, "pod does not exist"},
		{"POST", "/portForward/default/web/other-uid", 404, "pod not found"},
	} {
		assertResponse(t, h.do(t, tc.method, tc.target, nil), tc.code, tc.body)
	}
	if rt.execReq.GetContainerId() != "c2" || rt.execReq.Cmd[0] != "sh" || !rt.execReq.Stdout || rt.execReq.Stdin {
		t.Errorf("exec request %+v", rt.execReq)
	}

	// tty and stderr exclude each other.
	h.do(t, "POST", "/exec/default/web/app?command=sh&tty=1&error=1&input=1", nil)
	if !rt.execReq.Tty || rt.execReq.Stderr || !rt.execReq.Stdin {
		t.Errorf("exec request with tty %+v; want stderr off", rt.execReq)
	}

	// A WebSocket port-forward names its ports.
	for target, want := range map[string]string{
		"/portForward/default/web":            `query parameter "port" is required`,
		"/portForward/default/web?port=":      `query parameter "port" cannot be empty`,
		"/portForward/default/web?port=http":  `unable to parse "http" as a port`,
		"/portForward/default/web?port=0":     `port "0" must be > 0`,
		"/portForward/default/web?port=70000": `unable to parse "70000" as a port`,
	} {
		rec := httptestRecorder(h, websocket(target))
		assertResponse(t, rec, 400, want)
	}
	httptestRecorder(h, websocket("/portForward/default/web?port=80,8080&port=9090"))
	if got := rt.portForwardReq.GetPort(); !reflect.DeepEqual(got, []int32{80, 8080, 9090}) || rt.portForwardReq.PodSandboxId != "s1" {
		t.Errorf("port-forward request %+v", rt.portForwardReq)
	}
}

func TestLimits(t *testing.T) {
	h := testHandlers(t, nil, &fakeRuntime{}, nil)
	big := strings.Repeat("x", maxBodyBytes+1)
	assertResponse(t, h.do(t, "POST", "/stats/summary", strings.NewReader(big)), 413, "larger than the node API takes")
	req, _ := http.NewRequest("POST", "/stats/summary", strings.NewReader(big))
	req.ContentLength = -1 // chunked: the size is found by reading
	assertResponse(t, httptestRecorder(h, req), 413, "larger than the node API takes")
}

// httptestRecorder serves req through the secure router, with the
// debugging routes the handlers' config turns on.
func httptestRecorder(h *handlers, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	limitRequests(h.mux(secureEndpoints, debuggingOf(h.cfg))).ServeHTTP(rec, req)
	return rec
}
