package oomwatch

import (
	"strings"
	"testing"
	"time"
)

var boot = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestParserKills(t *testing.T) {
	at := func(s int) time.Time { return boot.Add(time.Duration(s) * time.Second) }
	for _, tc := range []struct {
		name  string
		lines []string
		want  []OOMInstance
	}{
		{
			name: "a container's limit, Linux 5.0 and later",
			lines: []string{
				"dd invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=995",
				"CPU: 1 PID: 4242 Comm: dd Not tainted 6.18.44",
				"memory: usage 32768kB, limit 32768kB, failcnt 12",
				"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=abc,mems_allowed=0,oom_memcg=/kubepods/burstable/pod1/abc,task_memcg=/kubepods/burstable/pod1/abc,task=dd,pid=4242,uid=0",
				"Memory cgroup out of memory: Killed process 4242 (dd) total-vm:70000kB, anon-rss:32000kB",
			},
			want: []OOMInstance{{PID: 4242, ProcessName: "dd", Time: at(3), OOMCgroup: "/kubepods/burstable/pod1/abc",
				TaskCgroup: "/kubepods/burstable/pod1/abc", Constraint: "CONSTRAINT_MEMCG"}},
		},
		{
			name: "the node out of memory",
			lines: []string{
				"stress invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=1000",
				"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/kubepods/besteffort/pod2/def,task=stress,pid=77,uid=0",
				"Out of memory: Killed process 77 (stress) total-vm:2000000kB",
			},
			want: []OOMInstance{{PID: 77, ProcessName: "stress", Time: at(1), OOMCgroup: "/",
				TaskCgroup: "/kubepods/besteffort/pod2/def", Constraint: "CONSTRAINT_NONE"}},
		},
		{
			name: "an old kernel",
			lines: []string{
				"ruby invoked oom-killer: gfp_mask=0x24000c0, order=0, oom_score_adj=0",
				"Task in /docker/abc killed as a result of limit of /docker/abc",
				"Memory cgroup out of memory: Kill process 1 (init) score 0 or sacrifice child",
				"Killed process 1532 (ruby) total-vm:1000kB, anon-rss:500kB, file-rss:0kB",
			},
			want: []OOMInstance{{PID: 1532, ProcessName: "ruby", Time: at(3), OOMCgroup: "/docker/abc", TaskCgroup: "/docker/abc"}},
		},
		{
			name:  "lines outside a kill",
			lines: []string{"Killed process 1 (init)", "eth0: link up"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p parser
			var got []OOMInstance
			for i, l := range tc.lines {
				if kill, ok := p.line(l, at(i)); ok {
					got = append(got, kill)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("kills %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("kill %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestRecord(t *testing.T) {
	msg, at, ok := record([]byte("6,3561,3387861292,-;dd invoked oom-killer: gfp_mask=0xcc0\n SUBSYSTEM=x\n"), boot)
	if !ok || msg != "dd invoked oom-killer: gfp_mask=0xcc0" || !at.Equal(boot.Add(3387861292*time.Microsecond)) {
		t.Errorf("record = %q %v %t", msg, at, ok)
	}
	for _, bad := range []string{"no separator", "6,1;x", "6,1,later,-;x"} {
		if _, _, ok := record([]byte(bad), boot); ok {
			t.Errorf("record(%q) parsed", bad)
		}
	}
}

func TestSystem(t *testing.T) {
	if !(OOMInstance{OOMCgroup: "/"}).System() || (OOMInstance{OOMCgroup: "/kubepods"}).System() {
		t.Error("System() is wrong")
	}
}

func TestMessage(t *testing.T) {
	for _, c := range []struct {
		o         OOMInstance
		container string
		want      string
	}{
		{OOMInstance{PID: 77, ProcessName: "stress"}, "", "System OOM encountered, victim process: stress, pid: 77"},
		{OOMInstance{}, "", "System OOM encountered"},
		{OOMInstance{PID: 77, ProcessName: "stress"}, "default/hog/app", "System OOM encountered, victim process: stress, pid: 77, container: default/hog/app"},
	} {
		if got := c.o.Message(c.container); got != c.want {
			t.Errorf("%+v, %q: Message() = %q, want %q", c.o, c.container, got, c.want)
		}
	}
}

func TestPodContainer(t *testing.T) {
	const uid = "0f6a1c3e-8d2b-4f7a-9c1d-2e3f4a5b6c7d"
	for cgroup, want := range map[string][2]string{
		"/kubepods/besteffort/pod" + uid + "/4f1e2d": {uid, "4f1e2d"},
		"/kubepods/pod" + uid + "/abc123":            {uid, "abc123"},
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice/cri-containerd-abc123.scope": {uid, "abc123"},
		"/":                              {},
		"/system.slice/sshd.service":     {},
		"/kubepods/besteffort/pod" + uid: {},
	} {
		gotUID, gotID, ok := OOMInstance{TaskCgroup: cgroup}.PodContainer()
		if ok != (want[0] != "") || gotUID != want[0] || gotID != want[1] {
			t.Errorf("%s: PodContainer() = %q, %q, %t; want %q, %q", cgroup, gotUID, gotID, ok, want[0], want[1])
		}
	}
}
