//go:build e2e

package clustere2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/internal/devnode"
)

const (
	// counterScript prints <prefix>-1, <prefix>-2, ... every 0.2 s.
	counterScript = `i=0; while true; do i=$((i+1)); echo "a-$i"; sleep 0.2; done`
	// onceAgainScript fails on its first run and runs on after its
	// restart, saying which run it is: --previous shows the first.
	onceAgainScript = `if [ -e /s/ran ]; then echo b-run-2; exec sleep 100000; fi; touch /s/ran; echo b-run-1; exit 1`
	// floodScript prints numbered 100-byte lines, about 25 KB/s.
	floodScript = `i=0; while true; do i=$((i+1)); printf 'r-%08d %089d\n' $i 0; [ $((i%25)) = 0 ] && sleep 0.1; done`
)

// testLogs: kubectl logs with each of its options on a pod of two
// containers, one of which has restarted once.
func testLogs(t *testing.T, n *clusterNode, ns string) {
	spec := apiPodSpec(n, v1.Container{Name: "a", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", counterScript}},
		v1.Volume{Name: "s", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	spec.Containers = append(spec.Containers, v1.Container{Name: "b", Image: devnode.DefaultTestImage,
		Command: []string{"sh", "-c", onceAgainScript}, VolumeMounts: []v1.VolumeMount{{Name: "s", MountPath: "/s"}}})
	if _, err := cluster(t).Admin.CoreV1().Pods(ns).Create(context.Background(),
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "logger"}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, n, ns, "logger", "b restarted once and running", func(p *v1.Pod) bool {
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == "b" {
				return s.RestartCount == 1 && s.State.Running != nil
			}
		}
		return false
	})
	logs := func(args ...string) string {
		return kubectl(t, append([]string{"logs", "-n", ns, "logger"}, args...)...)
	}
	eventually(t, "container a to have printed 20 lines", func() (bool, string) {
		out := logs("-c", "a")
		return strings.Contains(out, "a-20\n"), out
	})

	if got := logs("-c", "b"); got != "b-run-2\n" {
		t.Errorf("kubectl logs -c b = %q, want the running instance's b-run-2", got)
	}
	if got := logs("-c", "b", "--previous"); got != "b-run-1\n" {
		t.Errorf("kubectl logs -c b --previous = %q, want the first instance's b-run-1", got)
	}
	if got := logs("-c", "a", "--limit-bytes=5"); got != "a-1\na" {
		t.Errorf("kubectl logs --limit-bytes=5 = %q, want the first 5 bytes, %q", got, "a-1\na")
	}
	tail := strings.Split(strings.TrimSuffix(logs("-c", "a", "--tail=3"), "\n"), "\n")
	if len(tail) != 3 || counterOf(t, tail[0])+2 != counterOf(t, tail[2]) {
		t.Errorf("kubectl logs --tail=3 = %q, want 3 consecutive lines", tail)
	}

	// --timestamps: each line after its RFC 3339 time; --since-time of a
	// line's time starts at that line.
	stamped := strings.Split(strings.TrimSuffix(logs("-c", "a", "--timestamps"), "\n"), "\n")
	if len(stamped) < 20 {
		t.Fatalf("kubectl logs --timestamps: %d lines, want 20 or more:\n%s", len(stamped), strings.Join(stamped, "\n"))
	}
	var times []time.Time
	for i, line := range stamped {
		stamp, text, ok := strings.Cut(line, " ")
		ts, err := time.Parse(time.RFC3339Nano, stamp)
		if !ok || err != nil || text != fmt.Sprintf("a-%d", i+1) {
			t.Fatalf("kubectl logs --timestamps line %d = %q, want an RFC 3339 time and a-%d (%v)", i, line, i+1, err)
		}
		times = append(times, ts)
	}
	// kubectl sends the time in whole seconds (metav1.Time), so the
	// first line is the first of that second.
	sinceTime := times[10].Truncate(time.Second)
	k := 0
	for times[k].Before(sinceTime) {
		k++
	}
	since := logs("-c", "a", "--since-time="+times[10].Format(time.RFC3339Nano))
	if !strings.HasPrefix(since, fmt.Sprintf("a-%d\n", k+1)) {
		t.Errorf("kubectl logs --since-time=%s starts %.40q, want a-%d, the first line at or after it", sinceTime, since, k+1)
	}
	// --since: the last second has a few lines, not the first ones.
	recent := logs("-c", "a", "--since=1s")
	if recent == "" || strings.HasPrefix(recent, "a-1\n") || counterOf(t, firstLine(recent)) <= 5 {
		t.Errorf("kubectl logs --since=1s = %q, want only the last second's lines", recent)
	}

	all := logs("--all-containers", "--prefix")
	for _, want := range []string{"[pod/logger/a] a-1\n", "[pod/logger/b] b-run-2\n"} {
		if !strings.Contains(all, want) {
			t.Errorf("kubectl logs --all-containers --prefix lacks %q:\n%.300s", want, all)
		}
	}

	// -f: lines keep coming, consecutive, until kubectl is stopped.
	seen := followLines(t, []string{"logs", "-f", "-n", ns, "logger", "-c", "a", "--tail=1"}, func(lines []string) bool { return len(lines) >= 6 })
	first := counterOf(t, seen[0])
	for i, line := range seen {
		if counterOf(t, line) != first+i {
			t.Fatalf("kubectl logs -f gave %q, want consecutive lines", seen)
		}
	}
}

// testLogsAcrossRotation: kubectl logs -f from a container's first line
// on, while its log is rotated (container_log_max_size 64 KiB) several
// times, loses no line and repeats none.
func testLogsAcrossRotation(t *testing.T, n *clusterNode, ns string) {
	spec := apiPodSpec(n, v1.Container{Name: "r", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", floodScript}})
	pod, err := cluster(t).Admin.CoreV1().Pods(ns).Create(context.Background(),
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "flood"}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, n, ns, "flood", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	logDir := filepath.Join(n.PodLogsDir, fmt.Sprintf("%s_%s_%s", ns, pod.Name, pod.UID), "r")
	rotations := func() int {
		entries, _ := os.ReadDir(logDir)
		return len(entries) - 1
	}
	seen := followLines(t, []string{"logs", "-f", "-n", ns, "flood"}, func([]string) bool { return rotations() >= 3 })
	if rotations() < 3 {
		t.Fatalf("the log was rotated %d times, want 3", rotations())
	}
	for i, line := range seen {
		if !strings.HasPrefix(line, fmt.Sprintf("r-%08d ", i+1)) {
			t.Fatalf("kubectl logs -f across %d rotations: line %d is %.20q, want r-%08d (%d lines in all)", rotations(), i+1, line, i+1, len(seen))
		}
	}
	t.Logf("kubectl logs -f read %d lines across %d rotations", len(seen), rotations())
}

// followLines runs kubectl (logs -f) and collects its lines until enough
// says so, then stops it.
func followLines(t *testing.T, args []string, enough func([]string) bool) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := kubectlCommand(t, ctx, nil, args...)
	out, stderr := startReading(t, cmd)
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var lines []string
	scan := bufio.NewScanner(out)
	for scan.Scan() {
		lines = append(lines, scan.Text())
		if enough(lines) {
			return lines
		}
	}
	t.Fatalf("kubectl %s ended after %d lines: %v\n%s", strings.Join(args, " "), len(lines), scan.Err(), stderr.String())
	return nil
}

var counterLine = regexp.MustCompile(`^a-(\d+)$`)

// counterOf is the number of a line of counterScript.
func counterOf(t *testing.T, line string) int {
	t.Helper()
	m := counterLine.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("%q is not a line of the counter", line)
	}
	v, _ := strconv.Atoi(m[1])
	return v
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
