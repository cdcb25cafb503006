//go:build e2e

package podruntime_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/pods/podruntime"
	"github.com/microlet/microlet/core/runtime/container"
)

// emptyDirPath is where the manager keeps a pod's emptyDir on the node.
func (e *env) emptyDirPath(pod *v1.Pod, volume string) string {
	return filepath.Join(e.opts.RootDir, "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", volume)
}

// waitForFile waits until a file a container writes appears on the node.
func waitForFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(e2eTimeout)
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			return string(data)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear: %v", path, err)
		}
		time.Sleep(syncInterval)
	}
}

// portProbe stands in for a startup probe: one container has started once
// its port answers on the pod's address; every other container has.
type portProbe struct {
	e         *env
	ctx       context.Context
	pod       *v1.Pod
	container string
	port      int
}

func (p portProbe) ShouldRestart(string) (bool, string, *int64) { return false, "", nil }

func (p portProbe) Started(id string) bool {
	s := p.e.status(p.ctx, p.pod)
	if c := s.Container(p.container); c == nil || c.ID != id {
		return true
	}
	if len(s.IPs()) == 0 {
		return false
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(s.IPs()[0], strconv.Itoa(p.port)), time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

func TestE2EHooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := testContext(t)
	// A CGI script behind the sidecar's httpd records each hook it gets.
	www := filepath.Join(t.TempDir(), "www")
	if err := os.MkdirAll(filepath.Join(www, "cgi-bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho \"$REQUEST_METHOD\" > \"/shared/http-$QUERY_STRING\"\nprintf 'Content-Type: text/plain\\r\\n\\r\\nok\\n'\n"
	if err := os.WriteFile(filepath.Join(www, "cgi-bin", "hook"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	pod := e.pod(`
apiVersion: v1
kind: Pod
metadata: {name: hooks}
spec:
  terminationGracePeriodSeconds: 3
  volumes:
  - {name: shared, emptyDir: {}}
  - {name: www, hostPath: {path: ` + www + `, type: Directory}}
  initContainers:
  - name: web
    image: IMAGE
    imagePullPolicy: Never
    restartPolicy: Always
    command: ["httpd", "-f", "-p", "8080", "-h", "/www"]
    ports: [{name: http, containerPort: 8080}]
    volumeMounts: [{name: shared, mountPath: /shared}, {name: www, mountPath: /www}]
  containers:
  - name: app
    image: IMAGE
    imagePullPolicy: Never
    command: ` + politeLoop + `
    volumeMounts: [{name: shared, mountPath: /shared}]
    lifecycle:
      postStart: {exec: {command: ["sh", "-c", "echo started > /shared/exec-poststart"]}}
      preStop: {exec: {command: ["sh", "-c", "echo stopping > /shared/exec-prestop"]}}
  - name: client
    image: IMAGE
    imagePullPolicy: Never
    command: ` + politeLoop + `
    lifecycle:
      postStart: {httpGet: {path: "/cgi-bin/hook?poststart", port: 8080}}
      preStop: {httpGet: {path: "/cgi-bin/hook?prestop", port: 8080}}
`)
	probes := portProbe{e: e, ctx: ctx, pod: pod, container: "web", port: 8080}
	_, results := e.syncUntil(ctx, pod, probes, "all containers running", running("web", "app", "client"))
	for _, r := range results {
		if err := r.Err(); err != nil {
			t.Errorf("sync: %v", err)
		}
	}
	shared := e.emptyDirPath(pod, "shared")
	// postStart hooks ran before SyncPod returned.
	for file, want := range map[string]string{"exec-poststart": "started\n", "http-poststart": "GET\n"} {
		if got, err := os.ReadFile(filepath.Join(shared, file)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", file, got, err, want)
		}
	}

	// preStop hooks run when the pod is killed; the sidecar serving the
	// HTTP hook stops only after the containers.
	if err := e.m.KillPod(ctx, pod, e.runtimePod(ctx, pod), nil); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	for file, want := range map[string]string{"exec-prestop": "stopping\n", "http-prestop": "GET\n"} {
		if got, err := os.ReadFile(filepath.Join(shared, file)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", file, got, err, want)
		}
	}
}

func TestE2EFailedPostStartHookKillsTheContainer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := testContext(t)
	pod := e.pod(`
apiVersion: v1
kind: Pod
metadata: {name: badhook}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: IMAGE
    imagePullPolicy: Never
    command: ` + politeLoop + `
    lifecycle:
      postStart: {exec: {command: ["sh", "-c", "echo no good >&2; exit 7"]}}
`)
	r := e.m.SyncPod(ctx, pod, e.status(ctx, pod), nil)
	if !errors.Is(r.Err(), podruntime.ErrPostStartHook) {
		t.Fatalf("sync: %v, want PostStartHookError", r.Err())
	}
	step := r.Steps[len(r.Steps)-1]
	if step.Reason != podruntime.ReasonPostStartHookError || !strings.Contains(step.Message, `Exec lifecycle hook ([sh -c echo no good >&2; exit 7]) for Container "app"`) ||
		!strings.Contains(step.Message, "no good") {
		t.Errorf("step %+v", step)
	}
	if c := e.status(ctx, pod).Container("app"); c.State != container.StateExited {
		t.Errorf("container with a failed postStart hook is %s, want killed", c.State)
	}
}

func TestE2EVolumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := testContext(t)
	hostDir := filepath.Join(t.TempDir(), "host", "data")
	hostFile := filepath.Join(t.TempDir(), "app.conf")
	if err := os.WriteFile(hostFile, []byte("answer=42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := e.pod(`
apiVersion: v1
kind: Pod
metadata: {name: volumes}
spec:
  terminationGracePeriodSeconds: 2
  securityContext: {fsGroup: 2000}
  volumes:
  - {name: cache, emptyDir: {}}
  - {name: mem, emptyDir: {medium: Memory, sizeLimit: 16Mi}}
  - {name: host, hostPath: {path: ` + hostDir + `, type: DirectoryOrCreate}}
  - {name: conf, hostPath: {path: ` + hostFile + `, type: File}}
  containers:
  - name: app
    image: IMAGE
    imagePullPolicy: Never
    env: [{name: SUB, value: expr}]
    command:
    - sh
    - -c
    - |
      echo cache > /cache/a
      echo host > /host/b
      echo sub > /sub/c
      echo expr > /expr/d
      grep ' /mem ' /proc/mounts > /cache/mem
      cat /conf > /cache/conf
      if touch /ro/x 2>/dev/null; then echo writable; else echo read-only; fi > /cache/ro
      exec sleep 3600
    volumeMounts:
    - {name: cache, mountPath: /cache}
    - {name: mem, mountPath: /mem}
    - {name: host, mountPath: /host}
    - {name: host, mountPath: /sub, subPath: nested/dir}
    - {name: host, mountPath: /expr, subPathExpr: $(SUB)}
    - {name: conf, mountPath: /conf, readOnly: true}
    - {name: host, mountPath: /ro, readOnly: true}
`)
	e.syncUntil(ctx, pod, nil, "the container running", running("app"))
	cache := e.emptyDirPath(pod, "cache")
	if got := waitForFile(t, filepath.Join(cache, "ro")); got != "read-only\n" {
		t.Errorf("a readOnly mount was %s", got)
	}
	for path, want := range map[string]string{
		filepath.Join(cache, "a"):                    "cache\n",
		filepath.Join(hostDir, "b"):                  "host\n",
		filepath.Join(hostDir, "nested", "dir", "c"): "sub\n",
		filepath.Join(hostDir, "expr", "d"):          "expr\n",
		filepath.Join(cache, "conf"):                 "answer=42\n",
	} {
		if got, err := os.ReadFile(path); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", path, got, err, want)
		}
	}
	if mem, _ := os.ReadFile(filepath.Join(cache, "mem")); !strings.HasPrefix(string(mem), "tmpfs /mem tmpfs ") || !strings.Contains(string(mem), "size=16384k") {
		t.Errorf("the memory emptyDir is mounted as %q, want a 16 MiB tmpfs", mem)
	}
	// fsGroup owns the emptyDirs (setgid, so the container's files too),
	// never a hostPath, as upstream.
	for path, wantGID := range map[string]int64{cache: 2000, filepath.Join(cache, "a"): 2000, e.emptyDirPath(pod, "mem"): 2000, hostDir: 0} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := int64(info.Sys().(*syscall.Stat_t).Gid); got != wantGID || info.IsDir() && wantGID != 0 && info.Mode()&os.ModeSetgid == 0 {
			t.Errorf("%s: group %d mode %v, want group %d (setgid on an fsGroup's directory)", path, got, info.Mode(), wantGID)
		}
	}

	// Killed and cleaned up, the pod leaves no mount and no directory.
	if err := e.m.KillPod(ctx, pod, e.runtimePod(ctx, pod), nil); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	if err := e.m.CleanupPod(ctx, pod.UID); err != nil {
		t.Fatalf("CleanupPod: %v", err)
	}
	podDir := filepath.Join(e.opts.RootDir, "pods", string(pod.UID))
	if _, err := os.Stat(podDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod directory after CleanupPod: %v", err)
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mountinfo), podDir) {
		t.Errorf("mounts under %s remain after CleanupPod", podDir)
	}
	if got, err := os.ReadFile(filepath.Join(hostDir, "b")); err != nil || string(got) != "host\n" {
		t.Errorf("CleanupPod touched the hostPath volume: %q, %v", got, err)
	}
	links, _ := filepath.Glob(filepath.Join(e.opts.ContainerLogsDir, "*"))
	if len(links) != 0 {
		t.Errorf("container log links left: %v", links)
	}
}

func TestE2EVolumeConfigErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := testContext(t)
	missing := filepath.Join(t.TempDir(), "missing")
	pod := e.pod(`
apiVersion: v1
kind: Pod
metadata: {name: badvolume}
spec:
  volumes:
  - {name: data, hostPath: {path: ` + missing + `, type: Directory}}
  containers:
  - name: app
    image: IMAGE
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    volumeMounts: [{name: data, mountPath: /data}]
`)
	r := e.m.SyncPod(ctx, pod, e.status(ctx, pod), nil)
	if !errors.Is(r.Err(), podruntime.ErrCreateContainerConfig) {
		t.Fatalf("sync: %v, want CreateContainerConfigError", r.Err())
	}
	if step := r.Steps[len(r.Steps)-1]; step.Reason != podruntime.ReasonCreateContainerConfigError ||
		!strings.Contains(step.Message, "hostPath type check failed: "+missing+" is not a directory") {
		t.Errorf("step %+v", step)
	}
}

func TestE2ETerminationMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := testContext(t)
	pod := e.pod(`
apiVersion: v1
kind: Pod
metadata: {name: messages}
spec:
  restartPolicy: Never
  containers:
  - {name: file, image: IMAGE, imagePullPolicy: Never, command: ["sh", "-c", "printf bye > /dev/termination-log; exit 3"]}
  - name: logs
    image: IMAGE
    imagePullPolicy: Never
    terminationMessagePolicy: FallbackToLogsOnError
    # stdout and stderr are separate pipes, which the runtime copies into
    # the log in whatever order it reads them: the pause keeps the order.
    command: ["sh", "-c", "echo first; sleep 0.2; echo oops >&2; exit 1"]
  - name: custom
    image: IMAGE
    imagePullPolicy: Never
    terminationMessagePath: /tmp/why
    command: ["sh", "-c", "echo custom > /tmp/why"]
`)
	if err := e.m.SyncPod(ctx, pod, e.status(ctx, pod), nil).Err(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	s := e.waitFor(ctx, pod, "all containers exited", exited("file", "logs", "custom"))
	for name, want := range map[string]string{"file": "bye", "logs": "first\noops\n", "custom": "custom\n"} {
		if got := s.Container(name).Message; got != want {
			t.Errorf("%s: termination message %q, want %q", name, got, want)
		}
	}
	// A restarted core reads them again from the runtime alone.
	again, err := e.newManager().GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Container("logs").Message; got != "first\noops\n" {
		t.Errorf("after a restart: %q", got)
	}
}

func TestE2EStateRebuiltByAFreshManager(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := testContext(t)
	pod := e.pod(`
apiVersion: v1
kind: Pod
metadata: {name: rebuilt, labels: {app: rebuilt}}
spec:
  initContainers:
  - {name: init, image: IMAGE, imagePullPolicy: Never, command: ["sh", "-c", "exit 0"]}
  containers:
  - {name: one, image: IMAGE, imagePullPolicy: Never, command: ` + politeLoop + `}
  - {name: two, image: IMAGE, imagePullPolicy: Never, command: ` + politeLoop + `}
`)
	before, _ := e.syncUntil(ctx, pod, nil, "both containers running", running("one", "two"))

	// A sandbox microlet did not make, which it must leave alone.
	foreign, err := e.node.RuntimeClient().RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "foreign", Namespace: "other", Uid: "foreign-uid"},
		LogDirectory: t.TempDir(),
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}

	// The core restarts: a new manager with no memory of the pod.
	fresh := e.newManager()
	after, err := fresh.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after, cmpopts.IgnoreFields(container.PodStatus{}, "Timestamp")); diff != "" {
		t.Errorf("status rebuilt by a fresh manager (-old +new):\n%s", diff)
	}
	r := fresh.SyncPod(ctx, pod, after, nil)
	if len(r.Steps) != 0 {
		t.Errorf("the fresh manager's sync did %+v, want nothing", r.Steps)
	}
	if diff := cmp.Diff(before, e.status(ctx, pod), cmpopts.IgnoreFields(container.PodStatus{}, "Timestamp")); diff != "" {
		t.Errorf("status after the fresh manager's sync (-before +after):\n%s", diff)
	}

	pods, err := fresh.ListPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || pods[0].UID != pod.UID || pods[0].Name != pod.Name || len(pods[0].Sandboxes) != 1 || len(pods[0].Containers) != 3 {
		t.Errorf("ListPods = %+v, want only %s with 1 sandbox and 3 containers", pods, pod.Name)
	}
	for _, p := range pods {
		for _, s := range p.Sandboxes {
			if s.ID == foreign.PodSandboxId {
				t.Error("ListPods includes a sandbox microlet did not make")
			}
		}
	}
	for _, c := range pods[0].Containers {
		if sc := before.Container(c.Name); sc.ID != c.ID || sc.Hash != c.Hash || sc.State != c.State {
			t.Errorf("listed container %+v differs from the status %+v", c, sc)
		}
	}
	// Read from the listing (PLEG's relist), the status is the same, dated
	// at the listing.
	listedAt := time.Now().Add(-time.Second)
	listed, err := fresh.ListedPodStatus(ctx, pods[0], listedAt)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, listed, cmpopts.IgnoreFields(container.PodStatus{}, "Timestamp")); diff != "" {
		t.Errorf("status read from the listing (-GetPodStatus +ListedPodStatus):\n%s", diff)
	}
	if !listed.Timestamp.Equal(listedAt) {
		t.Errorf("status read from the listing dated %v, want the listing's %v", listed.Timestamp, listedAt)
	}

	// The pod's source forgets it while the core is down: the fresh
	// manager kills it as an orphan, from what the runtime knows.
	if err := fresh.KillPod(ctx, nil, pods[0], nil); err != nil {
		t.Fatalf("KillPod of an orphan: %v", err)
	}
	s := e.status(ctx, pod)
	for _, name := range []string{"one", "two"} {
		if c := s.Container(name); c.State != container.StateExited || c.ExitCode != 0 {
			t.Errorf("orphan's %s: %s exit %d, want stopped by SIGTERM", name, c.State, c.ExitCode)
		}
	}
	if s.Sandboxes[0].State != container.SandboxNotReady {
		t.Errorf("orphan's sandbox %s after KillPod", s.Sandboxes[0].State)
	}
}

// TestE2EMountPropagation: a hostPath mounted with HostToContainer sees a
// mount the host makes under it after the container started. The host path
// is made a shared mount first, as the kubelet requires of such paths (this
// machine's root mount is private).
func TestE2EMountPropagation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := testContext(t)
	shared := filepath.Join(t.TempDir(), "shared")
	inner := filepath.Join(shared, "inner")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(shared, shared, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind-mounting %s on itself: %v", shared, err)
	}
	t.Cleanup(func() {
		for _, dir := range []string{inner, shared} {
			if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
				t.Errorf("unmounting %s: %v", dir, err)
			}
		}
	})
	if err := unix.Mount("", shared, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		t.Fatalf("making %s shared: %v", shared, err)
	}
	pod := e.pod(`
apiVersion: v1
kind: Pod
metadata: {name: propagation}
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - {name: cache, emptyDir: {}}
  - {name: shared, hostPath: {path: ` + shared + `, type: Directory}}
  containers:
  - name: app
    image: IMAGE
    imagePullPolicy: Never
    command:
    - sh
    - -c
    - |
      until grep -q ' /shared/inner ' /proc/mounts; do sleep 0.2; done
      echo seen > /cache/seen
      exec sleep 3600
    volumeMounts:
    - {name: cache, mountPath: /cache}
    - {name: shared, mountPath: /shared, mountPropagation: HostToContainer}
`)
	e.syncUntil(ctx, pod, nil, "the container running", running("app"))
	if err := unix.Mount("tmpfs", inner, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mounting a tmpfs on %s: %v", inner, err)
	}
	if got := waitForFile(t, filepath.Join(e.emptyDirPath(pod, "cache"), "seen")); got != "seen\n" {
		t.Errorf("the container wrote %q", got)
	}
	if err := e.m.KillPod(ctx, pod, e.runtimePod(ctx, pod), nil); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	if err := e.m.CleanupPod(ctx, pod.UID); err != nil {
		t.Fatalf("CleanupPod: %v", err)
	}
}
