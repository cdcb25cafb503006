package oomwatch

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sys/unix"
)

// TestWatcherReportsSystemOOM feeds the watcher /dev/kmsg records through
// a packet socket (one record a read, as the device gives them): a
// container's limit and then the node out of memory. Only the second
// reaches OnSystemOOM, the kubelet's SystemOOM event, with the victim
// upstream's message names; both are counted by scope.
func TestWatcherReportsSystemOOM(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	dev, kernel := os.NewFile(uintptr(fds[0]), "kmsg"), os.NewFile(uintptr(fds[1]), "kernel")
	defer kernel.Close()
	reg := prometheus.NewPedanticRegistry()
	victims := make(chan OOMInstance, 4)
	w, err := newWatcher(dev, Options{Registerer: reg, OnSystemOOM: func(o OOMInstance) { victims <- o }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { w.Run(ctx); close(stopped) }()
	defer func() { cancel(); <-stopped }()

	for i, msg := range []string{
		"dd invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=995",
		"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=abc,mems_allowed=0,oom_memcg=/kubepods/pod1,task_memcg=/kubepods/pod1/abc,task=dd,pid=4242,uid=0",
		"Memory cgroup out of memory: Killed process 4242 (dd) total-vm:70000kB",
		"stress invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=1000",
		"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/kubepods/besteffort/pod2/def,task=stress,pid=77,uid=0",
		"Out of memory: Killed process 77 (stress) total-vm:2000000kB",
	} {
		record := "6," + string(rune('0'+i)) + ",1000000,-;" + msg + "\n SUBSYSTEM=memory\n"
		if _, err := kernel.Write([]byte(record)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case v := <-victims:
		if v.PID != 77 || v.ProcessName != "stress" || v.TaskCgroup != "/kubepods/besteffort/pod2/def" ||
			v.Message("") != "System OOM encountered, victim process: stress, pid: 77" {
			t.Errorf("system OOM victim %+v, message %q", v, v.Message(""))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no system OOM reported")
	}
	want := `
# HELP microlet_oom_kills_total Processes the kernel's OOM killer killed, by scope: system (the node ran out of memory) or cgroup (a memory limit).
# TYPE microlet_oom_kills_total counter
microlet_oom_kills_total{scope="cgroup"} 1
microlet_oom_kills_total{scope="system"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	select {
	case v := <-victims:
		t.Errorf("a second system OOM reported: %+v", v)
	default:
	}
}
