//go:build e2e

package nodeapie2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The rotation limits under test: small, so that ~50 MB of log rotate
// many times.
const (
	rotationMaxSize  = 1 << 20
	rotationMaxFiles = 3
	rotationInterval = 3 * time.Second // the kubelet's smallest
	// chatterRate bounds the writer (bytes a second): a log grows past
	// max_size by at most what is written before the next check.
	chatterRate = 1 << 20
	// chatterLines of 125 bytes are ~50 MB.
	chatterLines = 400_000
)

// chatter waits for the follow to start, then writes chatterLines
// numbered lines in bursts of 4000 (500 kB) every half second, then
// "done" once any rotation of the last lines is over.
var chatter = fmt.Sprintf(`pad=$(printf '%%0116d' 0); sleep 3; i=0
while [ $i -lt %d ]; do
  j=0; while [ $j -lt 4000 ]; do printf '%%08d %%s\n' $i $pad; i=$((i+1)); j=$((j+1)); done
  sleep 0.5
done
sleep 5; echo done; sleep 100000`, chatterLines)

// TestLogRotation: a container writing ~50 MB of logs ends with at most
// container_log_max_files files, the live one below container_log_max_size
// and the rotations gzipped but the newest, as the kubelet's; a follow from
// the start sees every line once, in order, across every rotation, the
// log reads after it, and /stats/summary counts the rotations.
func TestLogRotation(t *testing.T) {
	n := startAPINode(t, nodeOptions{settings: map[string]string{
		"container_log_max_size":         quote(strconv.Itoa(rotationMaxSize)),
		"container_log_max_files":        strconv.Itoa(rotationMaxFiles),
		"container_log_monitor_interval": quote(rotationInterval.String()),
	}})
	pod := n.RunPod("chatter", map[string]string{"app": chatter})
	logs := "/containerLogs/" + PodPath("chatter") + "/app"
	if last := followToDone(t, n, logs); last != chatterLines-1 {
		t.Fatalf("the follow ended at line %d, want %d", last, chatterLines-1)
	}

	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	status, err := n.CRI.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		t.Fatal(err)
	}
	live := status.Status.LogPath
	// The last rotation comes at most one interval after the writing ends.
	var files []string
	n.Eventually("the live log is below container_log_max_size", func() (bool, string) {
		files, err = filepath.Glob(live + "*")
		info, serr := os.Stat(live)
		return err == nil && serr == nil && info.Size() < rotationMaxSize, fmt.Sprintf("%v %v", files, serr)
	})
	if len(files) > rotationMaxFiles {
		t.Errorf("%d log files %q, want at most %d", len(files), files, rotationMaxFiles)
	}
	var plain, gzipped int
	var bytes uint64
	for _, f := range files {
		info, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		bytes += uint64(info.Size())
		switch {
		case f == live:
		case strings.HasSuffix(f, ".gz"):
			gzipped++
			if info.Size() >= rotationMaxSize {
				t.Errorf("compressed rotation %s has %d bytes", f, info.Size())
			}
		default:
			plain++
			// Rotated once it reached max_size, plus what the writer wrote
			// until the check (an interval and the check's own time).
			if limit := int64(rotationMaxSize + chatterRate*(rotationInterval/time.Second+2)); info.Size() > limit {
				t.Errorf("rotation %s has %d bytes, more than %d", f, info.Size(), limit)
			}
		}
	}
	if plain != 1 || gzipped != rotationMaxFiles-2 {
		t.Errorf("rotations %q: %d plain and %d gzipped, want 1 and %d", files, plain, gzipped, rotationMaxFiles-2)
	}
	// Ephemeral storage counts the rotations with the live log.
	n.Eventually("/stats/summary counts every log file", func() (bool, string) {
		used := containerLogsUsed(n, string(pod.UID))
		return used >= bytes, fmt.Sprintf("logs.usedBytes %d, files %d bytes", used, bytes)
	})
	if code, body := n.Get(logs); code != 200 || !strings.HasSuffix(body, "done\n") {
		t.Errorf("reading the log after rotation: %d, ends %q", code, body[max(0, len(body)-40):])
	}
	if _, metrics := n.Get("/metrics"); !strings.Contains(metrics, "microlet_container_log_rotations_total") {
		t.Error("/metrics has no microlet_container_log_rotations_total")
	}
}

// containerLogsUsed is /stats/summary's logs.usedBytes of the pod's one
// container, 0 when it is not there yet.
func containerLogsUsed(n *apiNode, uid string) uint64 {
	var summary statsapi.Summary
	if code, body := n.Get("/stats/summary"); code != 200 || json.Unmarshal([]byte(body), &summary) != nil {
		return 0
	}
	for _, p := range summary.Pods {
		if p.PodRef.UID == uid && len(p.Containers) == 1 && p.Containers[0].Logs != nil && p.Containers[0].Logs.UsedBytes != nil {
			return *p.Containers[0].Logs.UsedBytes
		}
	}
	return 0
}

// followToDone follows the log from its start to the writer's "done" and
// checks that every numbered line comes once, in order; it returns the
// last line's number.
func followToDone(t *testing.T, n *apiNode, logs string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.Secure+logs+"?follow=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The follow lasts longer than the client's timeout; the context
	// bounds it.
	follower := *n.Admin
	follower.Timeout = 0
	resp, err := follower.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	next := 0
	for lines.Scan() {
		if lines.Text() == "done" {
			return next - 1
		}
		number, _, _ := strings.Cut(lines.Text(), " ")
		i, err := strconv.Atoi(number)
		if err != nil || i != next {
			t.Fatalf("line %.20q after line %d: a line was lost or repeated", lines.Text(), next-1)
		}
		next++
	}
	t.Fatalf("the follow ended after line %d: %v", next-1, lines.Err())
	return 0
}
