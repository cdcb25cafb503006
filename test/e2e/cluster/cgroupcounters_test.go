//go:build e2e

package clustere2e

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// cgroupSample is what a cgroup's own files say at one moment: cumulative
// cpu time and the memory working set (usage less inactive file pages).
type cgroupSample struct {
	at         time.Time
	cpuNanos   uint64
	workingSet uint64
}

// cgroupCounters reads one cgroup's counters, on cgroup v1 (cpuacct and
// memory hierarchies) or v2 (the unified tree).
type cgroupCounters struct {
	// cpu and memory are the cgroup's directories in the cpu accounting
	// and memory hierarchies (the same directory on v2).
	cpu, memory string
	v2          bool
}

const cgroupMount = "/sys/fs/cgroup"

func cgroupV2() bool {
	_, err := os.Stat(filepath.Join(cgroupMount, "cgroup.controllers"))
	return err == nil
}

// rootCgroup is the machine's root cgroup: what the node's figures are of.
func rootCgroup() cgroupCounters {
	if cgroupV2() {
		return cgroupCounters{cpu: cgroupMount, memory: cgroupMount, v2: true}
	}
	return cgroupCounters{cpu: filepath.Join(cgroupMount, "cpuacct"), memory: filepath.Join(cgroupMount, "memory")}
}

// podCgroup finds the cgroup of the pod with uid below the node's cgroup
// root (in whichever QoS parent the cgroup plugin put it).
func podCgroup(t testing.TB, cgroupRoot, uid string) cgroupCounters {
	t.Helper()
	c := rootCgroup()
	find := func(hierarchy string) string {
		var found string
		_ = filepath.WalkDir(filepath.Join(hierarchy, cgroupRoot), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == "pod"+uid {
				found = path
				return filepath.SkipAll
			}
			return nil
		})
		if found == "" {
			t.Fatalf("no cgroup pod%s below %s", uid, filepath.Join(hierarchy, cgroupRoot))
		}
		return found
	}
	c.cpu, c.memory = find(c.cpu), find(c.memory)
	return c
}

func (c cgroupCounters) read() (cgroupSample, error) {
	s := cgroupSample{at: time.Now()}
	var err error
	if c.v2 {
		var stat map[string]uint64
		if stat, err = keyValues(filepath.Join(c.cpu, "cpu.stat")); err != nil {
			return s, err
		}
		s.cpuNanos = stat["usage_usec"] * 1000
		usage, err := c.memoryUsageV2()
		if err != nil {
			return s, err
		}
		if stat, err = keyValues(filepath.Join(c.memory, "memory.stat")); err != nil {
			return s, err
		}
		s.workingSet = usage - min(usage, stat["inactive_file"])
		return s, nil
	}
	if s.cpuNanos, err = fileUint(filepath.Join(c.cpu, "cpuacct.usage")); err != nil {
		return s, err
	}
	usage, err := fileUint(filepath.Join(c.memory, "memory.usage_in_bytes"))
	if err != nil {
		return s, err
	}
	stat, err := keyValues(filepath.Join(c.memory, "memory.stat"))
	if err != nil {
		return s, err
	}
	s.workingSet = usage - min(usage, stat["total_inactive_file"])
	return s, nil
}

// memoryUsageV2 is memory.current; the v2 root has none, and its usage is
// MemTotal - MemFree, as runc (and so cAdvisor and the kubelet) take it.
func (c cgroupCounters) memoryUsageV2() (uint64, error) {
	if c.memory != cgroupMount {
		return fileUint(filepath.Join(c.memory, "memory.current"))
	}
	info, err := keyValues("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	return (info["MemTotal:"] - info["MemFree:"]) * 1024, nil
}

// cgroupSampler reads a cgroup every 100 ms until stopped.
type cgroupSampler struct {
	mu      sync.Mutex
	samples []cgroupSample
	err     error
	stop    chan struct{}
	done    chan struct{}
}

func sampleCgroup(t testing.TB, c cgroupCounters) *cgroupSampler {
	s := &cgroupSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			sample, err := c.read()
			s.mu.Lock()
			s.samples, s.err = append(s.samples, sample), err
			s.mu.Unlock()
			if err != nil {
				return
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		close(s.stop)
		<-s.done
	})
	return s
}

// cpuRate is the cgroup's cpu usage in cores over [from, to], its counter
// interpolated between the samples around each end.
func (s *cgroupSampler) cpuRate(from, to time.Time) (float64, error) {
	a, err := s.cpuAt(from)
	if err != nil {
		return 0, err
	}
	b, err := s.cpuAt(to)
	if err != nil {
		return 0, err
	}
	return (b - a) / float64(to.Sub(from).Nanoseconds()), nil
}

func (s *cgroupSampler) cpuAt(at time.Time) (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	for i := 1; i < len(s.samples); i++ {
		a, b := s.samples[i-1], s.samples[i]
		if !at.Before(a.at) && !at.After(b.at) {
			f := float64(at.Sub(a.at)) / float64(b.at.Sub(a.at))
			return float64(a.cpuNanos) + f*(float64(b.cpuNanos)-float64(a.cpuNanos)), nil
		}
	}
	return 0, fmt.Errorf("no cgroup samples around %s", at.Format(time.RFC3339Nano))
}

// workingSetAround is the smallest and largest working set the cgroup had
// within a second of at.
func (s *cgroupSampler) workingSetAround(at time.Time) (lo, hi uint64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, 0, s.err
	}
	lo = ^uint64(0)
	for _, x := range s.samples {
		if d := x.at.Sub(at); d >= -time.Second && d <= time.Second {
			lo, hi = min(lo, x.workingSet), max(hi, x.workingSet)
		}
	}
	if hi == 0 {
		return 0, 0, fmt.Errorf("no cgroup samples around %s", at.Format(time.RFC3339Nano))
	}
	return lo, hi, nil
}

func fileUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// keyValues reads a "key value" file (cpu.stat, memory.stat, meminfo).
func keyValues(path string) (map[string]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		if v, err := strconv.ParseUint(fields[1], 10, 64); err == nil {
			out[fields[0]] = v
		}
	}
	return out, sc.Err()
}
