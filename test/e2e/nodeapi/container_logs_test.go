//go:build e2e

package nodeapie2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// talker writes numbered lines to stdout and stderr, five a second.
const talker = "i=0; while true; do echo out-$i; echo err-$i >&2; i=$((i+1)); sleep 0.2; done"

// TestContainerLogs reads a container's log through /containerLogs with
// the kubelet's options, the previous instance's log, and follows a log
// while the kubelet's rotation moves it.
func TestContainerLogs(t *testing.T) {
	n := startAPINode(t, nodeOptions{})
	pod := n.RunPod("talker", map[string]string{"app": talker})
	logs := "/containerLogs/" + PodPath("talker") + "/app"
	n.Eventually("the talker wrote 10 lines", func() (bool, string) {
		_, body := n.Get(logs + "?stream=Stdout")
		return strings.Count(body, "out-") >= 10, body
	})

	get := func(query string) string {
		t.Helper()
		code, body := n.Get(logs + query)
		if code != 200 {
			t.Fatalf("GET %s%s: %d %q", logs, query, code, body)
		}
		return body
	}
	// Both streams, each in its order (the runtime copies them apart, so
	// their interleaving is not fixed).
	if first := firstLines(get(""), 4); !strings.Contains(first, "out-0\n") || !strings.Contains(first, "err-0\n") ||
		strings.Index(first, "out-0") > strings.Index(first, "out-1") {
		t.Errorf("the whole log starts %q", first)
	}
	if body := get("?stream=Stdout"); !strings.HasPrefix(body, "out-0\nout-1\nout-2\n") || strings.Contains(body, "err-") {
		t.Errorf("stream=Stdout: %q", firstLines(body, 3))
	}
	if body := get("?tailLines=3"); strings.Count(body, "\n") != 3 {
		t.Errorf("tailLines=3: %q", body)
	}
	if body := get("?limitBytes=9&stream=Stdout"); body != "out-0\nout" {
		t.Errorf("limitBytes=9: %q", body)
	}
	if body := get("?stream=Stderr"); !strings.HasPrefix(body, "err-0\nerr-1\n") || strings.Contains(body, "out-") {
		t.Errorf("stream=Stderr: %q", firstLines(body, 3))
	}
	stamped := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z out-0$`)
	if line := firstLines(get("?timestamps=true&stream=Stdout"), 1); !stamped.MatchString(line) {
		t.Errorf("timestamps=true: first line %q", line)
	}
	if body := get("?sinceSeconds=1"); strings.Contains(body, "out-0\n") || strings.Count(body, "\n") > 20 {
		t.Errorf("sinceSeconds=1 has old lines: %q", firstLines(body, 3))
	}
	if code, body := n.Get(logs + "?tailLines=x"); code != 400 || !strings.Contains(body, "tailLines") {
		t.Errorf("a bad tailLines: %d %q", code, body)
	}
	if code, body := n.Get(logs + "?limitBytes=0"); code != 422 {
		t.Errorf("limitBytes=0: %d %q", code, body)
	}
	if code, body := n.Get(logs + "?previous=true"); code != 400 || !strings.Contains(body, "previous terminated container") {
		t.Errorf("previous of a container that never restarted: %d %q", code, body)
	}

	t.Run("follow across rotation", func(t *testing.T) { followAcrossRotation(t, n, pod, logs) })
}

// followAcrossRotation follows the log while rotating it as the kubelet
// does: rename the file, then have the runtime reopen it (CRI
// ReopenContainerLog). Every line comes once, in order, from before the
// rotation to well after it.
func followAcrossRotation(t *testing.T, n *apiNode, pod *v1.Pod, logs string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.Secure+logs+"?follow=true&stream=Stdout", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := n.Admin.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	next := -1
	// read checks that the next line follows the last and returns its number.
	read := func() int {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the follow ended after out-%d: %v", next-1, lines.Err())
		}
		i, err := strconv.Atoi(strings.TrimPrefix(lines.Text(), "out-"))
		if err != nil || (next >= 0 && i != next) {
			t.Fatalf("line %q after out-%d: a line was lost or repeated", lines.Text(), next-1)
		}
		next = i + 1
		return i
	}
	for read() < 12 {
	}

	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	status, err := n.CRI.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		t.Fatal(err)
	}
	path := status.Status.LogPath
	rotated := fmt.Sprintf("%s.%s", path, time.Now().Format("20060102-150405"))
	if err := os.Rename(path, rotated); err != nil {
		t.Fatal(err)
	}
	if _, err := n.CRI.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err != nil {
		t.Fatalf("ReopenContainerLog: %v", err)
	}
	rotatedAt := next
	for read() < rotatedAt+15 {
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the runtime did not reopen the log: %v", err)
	}
}

// TestPreviousLogs reads the log of a container's instance before its
// restart.
func TestPreviousLogs(t *testing.T) {
	n := startAPINode(t, nodeOptions{})
	n.Push(`apiVersion: v1
kind: Pod
metadata: {name: crasher, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: IMAGE
    command: ["sh", "-c", "echo run-$(cat /proc/sys/kernel/random/uuid); sleep 100000 & trap 'exit 1' TERM; sleep 3; exit 1"]
`)
	n.WaitPod("crasher", "restarted once and running", func(p *v1.Pod) bool {
		return allRunning(p) && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
	logs := "/containerLogs/" + PodPath("crasher") + "/app"
	_, current := n.Get(logs)
	code, previous := n.Get(logs + "?previous=true")
	if code != 200 || !strings.HasPrefix(previous, "run-") || !strings.HasPrefix(current, "run-") || previous == current {
		t.Errorf("previous %d %q, current %q: want two different runs", code, previous, current)
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
