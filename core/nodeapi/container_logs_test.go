package nodeapi

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/config"
)

// logFixture is a pod "web" whose container "app" ran twice: c1 (exited)
// wrote previous.log, c2 (running) writes 1.log, in a pod log directory
// under pod_logs_dir.
func logFixture(t *testing.T) (*handlers, *fakeRuntime, string) {
	t.Helper()
	var podLogsDir string
	web := webPod()
	rt := &fakeRuntime{statuses: map[string]*runtimeapi.ContainerStatus{}}
	h := testHandlers(t, fakePods{web}, rt, func(c *config.Config) { podLogsDir = c.PodLogsDir })
	dir := filepath.Join(podLogsDir, "default_web_uid-web", "app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, lines := range map[string][]string{
		"0.log": {"stdout F before restart"},
		"1.log": {"stdout F out one", "stderr F err one", "stdout F out two"},
	} {
		var b strings.Builder
		for i, l := range lines {
			fmt.Fprintf(&b, "2024-05-01T10:00:0%d.000000000Z %s\n", i, l)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rt.statuses["c1"] = &runtimeapi.ContainerStatus{Id: "c1", State: runtimeapi.ContainerState_CONTAINER_EXITED, LogPath: filepath.Join(dir, "0.log")}
	rt.statuses["c2"] = &runtimeapi.ContainerStatus{Id: "c2", State: runtimeapi.ContainerState_CONTAINER_EXITED, LogPath: filepath.Join(dir, "1.log")}
	return h, rt, dir
}

func TestContainerLogs(t *testing.T) {
	h, _, _ := logFixture(t)
	for _, tc := range []struct {
		query string
		code  int
		body  string
	}{
		{"", 200, "out one\nerr one\nout two\n"},
		{"?tailLines=1", 200, "out two\n"},
		{"?tail=2", 200, "err one\nout two\n"},
		{"?tail=all&tailLines=1", 200, "out one\nerr one\nout two\n"},
		{"?limitBytes=5", 200, "out o"},
		{"?timestamps=true&tailLines=1", 200, "2024-05-01T10:00:02.000000000Z out two\n"},
		{"?sinceTime=2024-05-01T10:00:01Z", 200, "err one\nout two\n"},
		{"?previous=true", 200, "before restart\n"},
		{"?previous=1", 200, "before restart\n"},
		{"?previous=false", 200, "out one"},
		{"?stream=Stderr", 200, "err one\n"},
		{"?stream=Stdout", 200, "out one\nout two\n"},
		{"?follow=true", 200, "out two\n"}, // the container is no longer running: the follow ends
		{"?tailLines=abc", 400, `{"message":"Unable to decode query: tailLines: expected a whole number, got \"abc\""}`},
		{"?sinceTime=yesterday", 400, "sinceTime: expected an RFC 3339 time"},
		{"?tailLines=-1", 422, "tailLines: must be greater than or equal to 0"},
		{"?limitBytes=0", 422, "limitBytes: must be greater than 0"},
		{"?sinceSeconds=0", 422, "sinceSeconds: must be greater than 0"},
		{"?sinceSeconds=5&sinceTime=2024-05-01T10:00:01Z", 422, "at most one of `sinceTime` or `sinceSeconds`"},
		{"?stream=Both", 422, `stream: expected All, Stdout or Stderr, got \"Both\"`},
		{"?stream=Stdout&tailLines=1", 422, "`tailLines` and specific `stream` are mutually exclusive"},
	} {
		rec := h.do(t, "GET", "/containerLogs/default/web/app"+tc.query, nil)
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("GET %s = %d %q, want %d with %q", tc.query, rec.Code, rec.Body.String(), tc.code, tc.body)
		}
	}
	assertResponse(t, h.do(t, "GET", "/containerLogs/default/nope/app", nil), 404, `pod "nope" does not exist`)
	assertResponse(t, h.do(t, "GET", "/containerLogs/default/web/nope", nil), 404, `container "nope" not found in pod "web"`)
	assertResponse(t, h.do(t, "GET", "/containerLogs/other/web/app", nil), 404, `pod "web" does not exist`)
}

// TestContainerLogsOutsidePodLogsDir: a log path the runtime reports
// outside pod_logs_dir, or a log file replaced by a symlink out of the
// pod's log directory, is not read.
func TestContainerLogsOutsidePodLogsDir(t *testing.T) {
	h, rt, dir := logFixture(t)
	secret := filepath.Join(t.TempDir(), "shadow")
	os.WriteFile(secret, []byte("2024-05-01T10:00:00Z stdout F SECRET\n"), 0o600)

	rt.statuses["c2"].LogPath = secret
	assertResponse(t, h.do(t, "GET", "/containerLogs/default/web/app", nil), 400, "outside the pod logs directory")

	rt.statuses["c2"].LogPath = filepath.Join(dir, "1.log")
	os.Remove(filepath.Join(dir, "1.log"))
	if err := os.Symlink(secret, filepath.Join(dir, "1.log")); err != nil {
		t.Fatal(err)
	}
	rec := h.do(t, "GET", "/containerLogs/default/web/app", nil)
	if rec.Code != 400 || strings.Contains(rec.Body.String(), "SECRET") {
		t.Errorf("a log symlinked out of the pod's directory: %d %q", rec.Code, rec.Body.String())
	}

	rt.statuses["c2"].LogPath = filepath.Join(dir, "..", "..", "..", filepath.Base(secret))
	assertResponse(t, h.do(t, "GET", "/containerLogs/default/web/app", nil), 400, "outside the pod logs directory")
}

func TestLogContainerID(t *testing.T) {
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	terminated := func(id string) v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: id}}
	}
	pod := func(state, last v1.ContainerState, id string) *v1.Pod {
		p := webPod()
		p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", ContainerID: id, State: state, LastTerminationState: last}}
		return p
	}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		previous bool
		want     string
		wantErr  string
	}{
		{name: "running", pod: pod(running, v1.ContainerState{}, "containerd://c2"), want: "c2"},
		{name: "previous", pod: pod(running, terminated("containerd://c1"), "containerd://c2"), previous: true, want: "c1"},
		{name: "no previous", pod: pod(running, v1.ContainerState{}, "containerd://c2"), previous: true, wantErr: "previous terminated container"},
		{name: "terminated", pod: pod(terminated("containerd://c3"), v1.ContainerState{}, ""), want: "c3"},
		{name: "terminated without ID falls back to the last", pod: pod(terminated(""), terminated("containerd://c1"), ""), want: "c1"},
		{name: "terminated without any ID", pod: pod(terminated(""), v1.ContainerState{}, ""), wantErr: "is terminated"},
		{name: "waiting after a crash", pod: pod(v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			terminated("containerd://c1"), ""), want: "c1"},
		{name: "image pull", pod: pod(v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ErrImagePull"}}, v1.ContainerState{}, ""),
			wantErr: "waiting to start: image can't be pulled"},
		{name: "creating", pod: pod(v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}, v1.ContainerState{}, ""),
			wantErr: "waiting to start: ContainerCreating"},
		{name: "no state yet", pod: pod(v1.ContainerState{}, v1.ContainerState{}, ""), wantErr: "waiting to start - no logs yet"},
	} {
		got, err := logContainerID(tc.pod, "app", tc.previous)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: %q, %v; want error %q", tc.name, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := logContainerID(webPod(), "nope", false); err == nil || !strings.Contains(err.Error(), "is not available") {
		t.Errorf("a container without status: %v", err)
	}
}
