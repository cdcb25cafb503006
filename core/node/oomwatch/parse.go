// Package oomwatch reads the kernel's OOM kills from /dev/kmsg, as the
// kubelet's OOM watcher does through cAdvisor's oomparser: each kill is
// logged and counted, and a system OOM (the whole node out of memory, not
// a cgroup's limit) is offered to whoever reports node events.
package oomwatch

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The kernel's lines of one OOM kill, as cAdvisor matches them: the
// first names the invoking task; since Linux 5.0 one summary line says
// whose limit was hit and which task died; older kernels say it in "Task
// in ... killed as a result of limit of ..." and "Killed process".
var (
	firstLine   = regexp.MustCompile(`invoked oom-killer:`)
	summaryLine = regexp.MustCompile(`oom-kill:constraint=(.*),nodemask=(.*),cpuset=(.*),mems_allowed=(.*),oom_memcg=(.*),task_memcg=(.*),task=(.*),pid=(.*),uid=(.*)`)
	// globalLine is the summary of a system OOM, which cAdvisor leaves to
	// "Killed process" and so loses the victim's cgroup.
	globalLine = regexp.MustCompile(`oom-kill:constraint=(.*),nodemask=(.*),cpuset=(.*),mems_allowed=(.*),global_oom,task_memcg=(.*),task=(.*),pid=(.*),uid=(.*)`)
	legacyLine = regexp.MustCompile(`Task in (.*) killed as a result of limit of (.*)`)
	killedLine = regexp.MustCompile(`Killed process ([0-9]+) \((.+)\)`)
)

// OOMInstance is one process the kernel's OOM killer killed.
type OOMInstance struct {
	PID         int
	ProcessName string
	// Time is when the kernel logged the kill.
	Time time.Time
	// OOMCgroup is the memory cgroup whose limit was hit, "/" when the
	// node itself ran out; TaskCgroup the killed process's cgroup (its
	// container's).
	OOMCgroup, TaskCgroup string
	// Constraint is the kernel's: CONSTRAINT_NONE, CONSTRAINT_CPUSET,
	// CONSTRAINT_MEMORY_POLICY or CONSTRAINT_MEMCG; empty on old kernels.
	Constraint string
}

// System says whether the node ran out of memory, rather than a cgroup
// reaching its limit: what the kubelet reports as a SystemOOM event.
func (o OOMInstance) System() bool { return o.OOMCgroup == "/" }

// SystemOOMReason is the reason of the node event for a system OOM, the
// kubelet's.
const SystemOOMReason = "SystemOOM"

// Message is the kubelet's text of the node event for a system OOM,
// followed by the victim's container when it had one: the kubelet names
// only the process, which leaves an operator to search for its pod.
func (o OOMInstance) Message(container string) string {
	msg := "System OOM encountered"
	if o.ProcessName != "" && o.PID != 0 {
		msg = fmt.Sprintf("%s, victim process: %s, pid: %d", msg, o.ProcessName, o.PID)
	}
	if container != "" {
		msg += ", container: " + container
	}
	return msg
}

// podSegment is a pod's cgroup: "pod<uid>" under cgroupfs,
// "kubepods-<qos>-pod<uid with _>.slice" under systemd.
var podSegment = regexp.MustCompile(`pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})(\.slice)?$`)

// PodContainer reads the victim's pod UID and container ID from its
// cgroup: the segment after the pod's is the container's, named by its
// ID (cgroupfs) or "<runtime>-<id>.scope" (systemd).
func (o OOMInstance) PodContainer() (podUID, containerID string, ok bool) {
	parts := strings.Split(strings.Trim(o.TaskCgroup, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if m := podSegment.FindStringSubmatch(parts[i]); m != nil {
			id := strings.TrimSuffix(parts[i+1], ".scope")
			if j := strings.LastIndexByte(id, '-'); j >= 0 {
				id = id[j+1:]
			}
			return strings.ReplaceAll(m[1], "_", "-"), id, id != ""
		}
	}
	return "", "", false
}

// parser assembles OOM kills from kernel log lines, one kill at a time.
type parser struct {
	current *OOMInstance
}

// line takes the next kernel message and returns a kill once its lines
// are complete.
func (p *parser) line(msg string, at time.Time) (OOMInstance, bool) {
	if firstLine.MatchString(msg) {
		p.current = &OOMInstance{OOMCgroup: "/", TaskCgroup: "/"} // Time: the line that completes it (done)
		return OOMInstance{}, false
	}
	if p.current == nil {
		return OOMInstance{}, false
	}
	o := p.current
	if m := summaryLine.FindStringSubmatch(msg); m != nil {
		pid, err := strconv.Atoi(m[8])
		if err != nil {
			return OOMInstance{}, false
		}
		o.Constraint, o.OOMCgroup, o.TaskCgroup, o.ProcessName, o.PID = m[1], m[5], m[6], m[7], pid
		return p.done(at)
	}
	if m := globalLine.FindStringSubmatch(msg); m != nil {
		pid, err := strconv.Atoi(m[7])
		if err != nil {
			return OOMInstance{}, false
		}
		o.Constraint, o.OOMCgroup, o.TaskCgroup, o.ProcessName, o.PID = m[1], "/", m[5], m[6], pid
		return p.done(at)
	}
	if m := legacyLine.FindStringSubmatch(msg); m != nil {
		o.TaskCgroup, o.OOMCgroup = cgroupPath(m[1]), cgroupPath(m[2])
		return OOMInstance{}, false
	}
	if m := killedLine.FindStringSubmatch(msg); m != nil {
		pid, err := strconv.Atoi(m[1])
		if err != nil {
			return OOMInstance{}, false
		}
		o.PID, o.ProcessName = pid, m[2]
		return p.done(at)
	}
	return OOMInstance{}, false
}

func (p *parser) done(at time.Time) (OOMInstance, bool) {
	o := *p.current
	o.Time = at
	p.current = nil
	return o, true
}

// cgroupPath makes an old kernel's cgroup name absolute.
func cgroupPath(name string) string {
	return "/" + strings.TrimPrefix(name, "/")
}

// record is one /dev/kmsg record: "<prio>,<seq>,<usec since boot>,<flags>[,...];<message>"
// (Documentation/ABI/testing/dev-kmsg); continuation lines after the
// message ("\n KEY=value") are dropped.
func record(b []byte, boot time.Time) (string, time.Time, bool) {
	meta, msg, ok := strings.Cut(string(b), ";")
	if !ok {
		return "", time.Time{}, false
	}
	fields := strings.Split(meta, ",")
	if len(fields) < 3 {
		return "", time.Time{}, false
	}
	usec, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	msg, _, _ = strings.Cut(msg, "\n")
	return msg, boot.Add(time.Duration(usec) * time.Microsecond), true
}
