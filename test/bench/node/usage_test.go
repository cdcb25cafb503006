//go:build e2e

package nodebench

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/microlet/microlet/internal/e2e"
	"github.com/microlet/microlet/test/testplugins/smaps"
)

// memory is a set of processes' memory, summed, in KB. anonKB is the
// anonymous part (heap, stacks); the rest of PSS is mapped files, mostly
// the executable.
type memory struct {
	rssKB, pssKB, anonKB int64
}

// readMemory sums the resident and proportional set sizes of pids, from
// /proc/<pid>/smaps_rollup. PSS shares pages mapped by several processes
// (one binary's text, shared libraries) among them, so the sum over a core
// and its plugins counts each page once.
func readMemory(pids []int) (memory, error) {
	var total memory
	for _, pid := range pids {
		m, err := smaps.Rollup(strconv.Itoa(pid))
		if err != nil {
			return memory{}, err
		}
		total = total.plus(memory{rssKB: m.RssKB, pssKB: m.PssKB, anonKB: m.AnonKB})
	}
	return total, nil
}

// cpuTime is the user and system time pids have used, summed.
func cpuTime(pids []int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		p, err := procfs.NewProc(pid)
		if err != nil {
			return 0, err
		}
		st, err := p.Stat()
		if err != nil {
			return 0, err
		}
		total += time.Duration(st.CPUTime() * float64(time.Second))
	}
	return total, nil
}

// machineBusy is the time all CPUs have spent on anything but idling and
// waiting for I/O since boot.
func machineBusy() (time.Duration, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, err
	}
	st, err := fs.Stat()
	if err != nil {
		return 0, err
	}
	t := st.CPUTotal
	busy := t.User + t.Nice + t.System + t.IRQ + t.SoftIRQ + t.Steal
	return time.Duration(busy * float64(time.Second)), nil
}

// idleUsage reads pids' memory samples times over window, e2e.SampleGap
// apart, and returns the mean, summed and per process, with the CPU they
// used over window in thousandths of a core.
func idleUsage(pids []int, window time.Duration, samples int) (total memory, perProcess []memory, millicores float64, err error) {
	before, err := cpuTime(pids)
	if err != nil {
		return total, nil, 0, err
	}
	start := time.Now()
	perProcess = make([]memory, len(pids))
	for range samples {
		time.Sleep(e2e.SampleGap(window, samples))
		for i, pid := range pids {
			m, err := readMemory([]int{pid})
			if err != nil {
				return total, nil, 0, err
			}
			perProcess[i] = perProcess[i].plus(m)
		}
	}
	after, err := cpuTime(pids)
	if err != nil {
		return total, nil, 0, err
	}
	for i := range perProcess {
		perProcess[i] = perProcess[i].over(samples)
		total = total.plus(perProcess[i])
	}
	return total, perProcess, float64(after-before) / float64(time.Since(start)) * 1000, nil
}

func (m memory) plus(o memory) memory {
	return memory{rssKB: m.rssKB + o.rssKB, pssKB: m.pssKB + o.pssKB, anonKB: m.anonKB + o.anonKB}
}

func (m memory) over(n int) memory {
	return memory{rssKB: m.rssKB / int64(n), pssKB: m.pssKB / int64(n), anonKB: m.anonKB / int64(n)}
}

// command is a process's command name (/proc/<pid>/comm), for reports.
func command(pid int) string {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return strconv.Itoa(pid)
	}
	name, err := p.Comm()
	if err != nil {
		return strconv.Itoa(pid)
	}
	return name
}

// alive says whether a process exists.
func alive(pid int) bool {
	_, err := procfs.NewProc(pid)
	return err == nil
}

// children are the processes whose parent is pid.
func children(pid int) ([]process, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil, err
	}
	var out []process
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil || st.PPID != pid {
			continue
		}
		out = append(out, process{pid: p.PID, startTime: st.Starttime})
	}
	return out, nil
}

// same says whether the process still runs and is the one recorded, not a
// later one given its PID.
func (p process) same() bool {
	proc, err := procfs.NewProc(p.pid)
	if err != nil {
		return false
	}
	st, err := proc.Stat()
	return err == nil && st.Starttime == p.startTime
}

func (m memory) String() string {
	return fmt.Sprintf("RSS %.1f MB PSS %.1f MB (anon %.1f MB)", float64(m.rssKB)/1024, float64(m.pssKB)/1024, float64(m.anonKB)/1024)
}

// A machine is quiet once its busy time has stayed under quietBusy, in
// cores, over quietReads reads quietGap apart: the idle agents, runtimes and
// pods use a tenth of a core.
const (
	quietBusy    = 0.25
	quietGap     = 500 * time.Millisecond
	quietReads   = 2
	quietTimeout = 90 * time.Second
)

// waitQuiet waits until the machine is quiet, for at most quietTimeout, and
// returns how long that took. Each measurement starts on a quiet machine:
// what a system does after a measurement (removing a stopped batch's
// containers and sandboxes, its garbage collection) would otherwise weigh
// on whichever system is timed next, always the same one since they take
// turns in a fixed order (the floor started 110 pods in 31.7 s right after
// microlet's node had stopped a batch and was removing it, against 26.5 and
// 28.5 s in its other runs, issue 18).
func waitQuiet(b *testing.B) time.Duration {
	start := time.Now()
	last, err := machineBusy()
	if err != nil {
		b.Fatal(err)
	}
	quiet := 0
	for quiet < quietReads {
		if time.Since(start) > quietTimeout {
			b.Logf("the machine is still busy after %v; measuring anyway", quietTimeout)
			break
		}
		time.Sleep(quietGap)
		busy, err := machineBusy()
		if err != nil {
			b.Fatal(err)
		}
		if float64(busy-last)/float64(quietGap) < quietBusy {
			quiet++
		} else {
			quiet = 0
		}
		last = busy
	}
	return time.Since(start)
}
