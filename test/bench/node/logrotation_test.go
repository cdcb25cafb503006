//go:build e2e

package nodebench

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/microlet/microlet/internal/e2e"
)

// The log rotation benchmark's load and limits (issue 16's budget: 30
// containers writing 1 MB/s each). Both agents get the kubelet's defaults,
// set explicitly so that they stay the same if a default changes.
const (
	logWriters         = 30
	logMaxSize         = "10Mi"
	logMaxFiles        = 5
	logMonitorInterval = 10 * time.Second
	logMaxWorkers      = 1
	// logIdleWindow measures the agent with the writers quiet: what it
	// costs without rotating; logWriteWindow with them writing, after
	// logWarmUp of writing: by then every log was rotated once, so that in
	// the window each rotation also gzips the one before it, as in the
	// steady state of a long-running node (a window from the first write
	// would count rotations whose compression comes after it).
	logIdleWindow  = 30 * time.Second
	logWarmUp      = 30 * time.Second
	logWriteWindow = 60 * time.Second
	// logScanPeriod is how often the benchmark looks for new rotations:
	// well below the monitor interval, so that it sees each rotated file
	// before the next rotation gzips it.
	logScanPeriod = time.Second
	// logKubeletStartTimeout bounds the wait for the host's devnode
	// kubelet slot: longer than the node benchmark's, since a node or
	// cluster benchmark elsewhere on the machine holds it for up to half
	// an hour.
	logKubeletStartTimeout = 40 * time.Minute
)

// logWriter is each pod's program: it builds 1 MiB of log lines once
// (8192 lines of 128 bytes, varied like a server's access log, so that
// gzip has real work), then writes it once a second while /ctl/go exists.
const logWriter = `awk 'BEGIN { srand(1); pad = sprintf("%128s", "");
  for (i = 0; i < 8192; i++) {
    s = sprintf("%08d level=info msg=\"request served\" path=/api/v1/items/%06d status=200 dur_us=%07d id=%08x ",
      i, int(rand() * 1000000), int(rand() * 10000000), int(rand() * 2147483647));
    printf "%s%s\n", s, substr(pad, 1, 127 - length(s)) } }' > /tmp/block
while true; do if [ -e /ctl/go ]; then cat /tmp/block; fi; sleep 1; done`

// rotationFigures are one agent's log rotation results.
type rotationFigures struct {
	system string
	// idle and busy are the agent's CPU time over logIdleWindow and
	// logWriteWindow; rotatedBytes what it rotated in the latter,
	// rotations how many files; compressedBytes and compressions what it
	// gzipped (about as much, in the steady state).
	idle, busy                    time.Duration
	rotatedBytes, compressedBytes int64
	rotations, compressions       int
}

// cpuPerMB is the CPU the rotations took, in core seconds per MB (10^6
// bytes) rotated: the busy window's CPU less the idle rate over as long.
func (f rotationFigures) cpuPerMB() float64 {
	extra := f.busy.Seconds() - f.idle.Seconds()*logWriteWindow.Seconds()/logIdleWindow.Seconds()
	return extra / (float64(f.rotatedBytes) / 1e6)
}

// BenchmarkLogRotation measures what container log rotation costs the
// agent: the upstream kubelet and microlet, each on a devnode of its own
// with the same container_log_max_size, max_files, monitor interval and
// workers, run logWriters pods whose container writes 1 MiB of log a
// second. The agent's CPU (/proc/<pid>/stat: microlet's core and plugins,
// the kubelet's one process) is read over a quiet window, then, after a
// warm-up of writing, over a window of writing while the benchmark records
// every rotated file and its size (the uncompressed size, read before the
// next rotation gzips it, from the gzip trailer otherwise). It reports core
// seconds per MB rotated beyond the quiet rate, and the MB gzipped in the
// window beside the MB rotated. The agents take turns, so that only one
// rotates at a time.
//
//	make build && E2E_BIN_DIR=$PWD/_output/bin \
//	  go test -run '^$' -bench LogRotation -benchtime 1x -tags e2e -timeout 60m ./test/bench/node/
func BenchmarkLogRotation(b *testing.B) {
	// microlet goes first: the kubelet may wait for the host's one devnode
	// kubelet slot, which other benchmarks share.
	m := runMicrolet(b, "logs", microletBinaries(b, os.Getenv(e2e.EnvDir)),
		fmt.Sprintf("container_log_max_size = %q", logMaxSize),
		fmt.Sprintf("container_log_max_files = %d", logMaxFiles),
		fmt.Sprintf("container_log_monitor_interval = %q", logMonitorInterval),
		fmt.Sprintf("container_log_max_workers = %d", logMaxWorkers))
	results := []rotationFigures{measureAgent(b, "microlet", m, filepath.Join(m.node.Dir, "microlet", "pod-logs"))}
	k := runKubelet(b, logKubeletStartTimeout, func(c *kubeletconfig.KubeletConfiguration) {
		files, workers := int32(logMaxFiles), int32(logMaxWorkers)
		c.ContainerLogMaxSize = logMaxSize
		c.ContainerLogMaxFiles = &files
		c.ContainerLogMaxWorkers = &workers
		c.ContainerLogMonitorInterval = &metav1.Duration{Duration: logMonitorInterval}
	})
	results = append(results, measureAgent(b, "kubelet", k, k.k.PodLogsDir()))
	b.ReportMetric(0, "ns/op")
	for _, f := range results {
		metric := func(v float64, unit string) { b.ReportMetric(v, f.system+"-"+unit) }
		metric(f.cpuPerMB(), "cpu-s/MB")
		metric(float64(f.rotatedBytes)/1e6, "MB-rotated")
		metric(float64(f.rotations), "rotations")
		metric(float64(f.compressedBytes)/1e6, "MB-gzipped")
		metric(f.idle.Seconds(), "idle-cpu-s")
		metric(f.busy.Seconds(), "busy-cpu-s")
	}
	fmt.Printf("\nlog rotation, %d containers at 1 MiB/s, max_size %s, max_files %d (idle %v, writing %v)\n",
		logWriters, logMaxSize, logMaxFiles, logIdleWindow, logWriteWindow)
	fmt.Printf("%-9s %10s %9s %10s %10s %11s %11s %14s\n", "agent", "rotations", "MB", "gzipped", "MB", "idle cpu s", "busy cpu s", "cpu s per MB")
	for _, f := range results {
		fmt.Printf("%-9s %10d %9.0f %10d %10.0f %11.2f %11.2f %14.5f\n", f.system, f.rotations, float64(f.rotatedBytes)/1e6,
			f.compressions, float64(f.compressedBytes)/1e6, f.idle.Seconds(), f.busy.Seconds(), f.cpuPerMB())
	}
}

// measureAgent runs the writers on an agent and measures its rotations.
func measureAgent(b *testing.B, name string, sys system, logsDir string) rotationFigures {
	ctl := filepath.Join(sys.devnode().Dir, "logbench-ctl")
	if err := os.MkdirAll(ctl, 0o755); err != nil {
		b.Fatal(err)
	}
	runWriters(b, sys, name, ctl)
	return measureRotation(b, name, sys, logsDir, ctl)
}

// runWriters starts logWriters writer pods on the agent and waits until
// all run.
func runWriters(b *testing.B, sys system, name, ctl string) {
	dir := ""
	switch s := sys.(type) {
	case *kubelet:
		dir = s.dir
	case *microlet:
		dir = s.dir
	}
	image := sys.devnode().TestImage
	for i := range logWriters {
		pod := v1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("writer-%02d", i), Namespace: namespace},
			Spec: v1.PodSpec{
				Containers: []v1.Container{{Name: "writer", Image: image, ImagePullPolicy: v1.PullIfNotPresent,
					Command:      []string{"sh", "-c", logWriter},
					VolumeMounts: []v1.VolumeMount{{Name: "ctl", MountPath: "/ctl"}}}},
				Volumes: []v1.Volume{{Name: "ctl", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: ctl}}}},
			},
		}
		data, err := yaml.Marshal(&pod)
		if err != nil {
			b.Fatal(err)
		}
		tmp := filepath.Join(dir, "."+pod.Name+".yaml")
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, pod.Name+".yaml")); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), measureTimeout)
	defer cancel()
	for {
		n, err := runningContainers(ctx, sys.devnode().RuntimeClient())
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		if n == logWriters {
			return
		}
		select {
		case <-ctx.Done():
			b.Fatalf("%s: %d of %d writers run after %v", name, n, logWriters, measureTimeout)
		case <-time.After(time.Second):
		}
	}
}

// measureRotation reads the agent's CPU over the quiet window, then, after
// the warm-up, over the writing window while recording the rotations; then
// it stops the writers.
func measureRotation(b *testing.B, name string, sys system, logsDir, ctl string) rotationFigures {
	f := rotationFigures{system: name}
	agentCPU := func() time.Duration {
		pids, err := sys.processes()
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		t, err := cpuTime(pids)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		return t
	}
	// The writers built their block and the agent settled after the
	// start.
	time.Sleep(settle)
	before := agentCPU()
	time.Sleep(logIdleWindow)
	f.idle = agentCPU() - before

	if err := os.WriteFile(filepath.Join(ctl, "go"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	// What the warm-up rotated and gzipped is not counted.
	var warm, window rotationScan
	scanFor(b, logsDir, &warm, logWarmUp)
	window.before = &warm
	before = agentCPU()
	scanFor(b, logsDir, &window, logWriteWindow)
	f.busy = agentCPU() - before
	if err := os.Remove(filepath.Join(ctl, "go")); err != nil {
		b.Fatal(err)
	}
	for key, size := range window.size {
		f.rotations++
		f.rotatedBytes += size
		if window.gzipped[key] {
			f.compressions++
			f.compressedBytes += size
		}
	}
	for key := range window.gzipped {
		if size, ok := warm.size[key]; ok {
			f.compressions++
			f.compressedBytes += size
		}
	}
	if len(warm.size) < logWriters {
		b.Fatalf("%s: %d rotations in the %v warm-up, want one a log at least", name, len(warm.size), logWarmUp)
	}
	if f.rotations == 0 {
		b.Fatalf("%s rotated nothing in %v", name, logWriteWindow)
	}
	return f
}

// rotationScan is what the benchmark saw of the rotated log files under
// an agent's pod logs directory (<pod>/<container>/<n>.log.<timestamp>,
// then .gz), each by its name without .gz: size is the uncompressed size
// of each rotation first seen in this scan, gzipped the rotations first
// seen compressed in it. Rotations that before saw are left out.
type rotationScan struct {
	before  *rotationScan
	size    map[string]int64
	gzipped map[string]bool
}

// scanFor scans every logScanPeriod for d: well below the monitor
// interval, so that each rotation is seen uncompressed before the next
// one gzips it.
func scanFor(b *testing.B, logsDir string, s *rotationScan, d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		time.Sleep(logScanPeriod)
		if err := s.scan(logsDir); err != nil {
			b.Fatal(err)
		}
	}
}

func (s *rotationScan) scan(logsDir string) error {
	if s.size == nil {
		s.size, s.gzipped = map[string]int64{}, map[string]bool{}
	}
	files, err := filepath.Glob(filepath.Join(logsDir, "*", "*", "*.log.*"))
	if err != nil {
		return err
	}
	for _, file := range files {
		if strings.HasSuffix(file, ".tmp") {
			continue
		}
		key, compressed := strings.CutSuffix(file, ".gz")
		if compressed {
			if s.before != nil && s.before.gzipped[key] {
				continue
			}
			s.gzipped[key] = true
		}
		if s.before != nil {
			if _, ok := s.before.size[key]; ok {
				continue
			}
		}
		if _, ok := s.size[key]; ok && compressed {
			continue
		}
		size, err := uncompressedSize(file, compressed)
		if err != nil {
			continue // gzipped or removed meanwhile
		}
		s.size[key] = max(s.size[key], size)
	}
	return nil
}

// uncompressedSize is a rotated file's size, or for a gzipped one the size
// in its trailer (ISIZE, modulo 2^32: rotated files are far smaller).
func uncompressedSize(path string, compressed bool) (int64, error) {
	if !compressed {
		info, err := os.Stat(path)
		if err != nil {
			return 0, err
		}
		return info.Size(), nil
	}
	return gzipSize(path)
}

// gzipSize is a gzip file's uncompressed size, from its trailer (ISIZE,
// the size modulo 2^32: rotated files are far smaller).
func gzipSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if _, err := f.Seek(-4, io.SeekEnd); err != nil {
		return 0, err
	}
	var trailer [4]byte
	if _, err := io.ReadFull(f, trailer[:]); err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint32(trailer[:])), nil
}
