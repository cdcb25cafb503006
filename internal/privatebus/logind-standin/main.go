// Command logind-standin is a small stand-in for systemd-logind, for tests
// on a machine without systemd: on the bus it is given (a private
// dbus-daemon), it owns org.freedesktop.login1 and serves what the
// kubelet's node shutdown manager uses of org.freedesktop.login1.Manager
// (Inhibit, returning a pipe's write end as logind does; the
// InhibitDelayMaxUSec property; the PrepareForShutdown signal), and owns
// org.freedesktop.systemd1 for Manager.KillUnit, whose SIGHUP to
// systemd-logind.service rereads InhibitDelayMaxSec from -conf-dir as
// logind rereads its drop-ins.
//
// It reads commands on stdin, one a line: "prepare true" (the machine
// starts shutting down: PrepareForShutdown(true), then logind's wait for
// every delay lock to be released or InhibitDelayMaxUSec to pass) and
// "prepare false" (the shutdown is cancelled). It reports on stdout, one a
// line: "ready", "inhibit <what> <who> <mode> <why>", "held <n>" (lock n's
// descriptor reached the caller's process), "reload <usec>", "prepare
// <bool>", "released <n>" (lock n's last descriptor was closed),
// "delay-done" (no delay lock left) and "delay-over" (the delay passed
// with locks held).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
	"golang.org/x/sys/unix"
)

const (
	logindName  = "org.freedesktop.login1"
	logindPath  = dbus.ObjectPath("/org/freedesktop/login1")
	logindIface = "org.freedesktop.login1.Manager"
	systemdName = "org.freedesktop.systemd1"
	systemdPath = dbus.ObjectPath("/org/freedesktop/systemd1")
)

type standin struct {
	conn    *dbus.Conn
	props   *prop.Properties
	confDir string

	mu    sync.Mutex
	out   *bufio.Writer
	next  int
	held  map[int]bool // delay locks not released yet
	freed chan struct{}
}

func (s *standin) say(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.out, format+"\n", args...)
	s.out.Flush()
}

// Inhibit is logind's: a pipe whose write end the caller holds; the lock
// is released when every copy of it is closed (the read end sees EOF).
func (s *standin) Inhibit(sender dbus.Sender, what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	s.mu.Lock()
	s.next++
	n := s.next
	if mode == "delay" {
		s.held[n] = true
	}
	s.mu.Unlock()
	s.say("inhibit %s %s %s %s", what, who, mode, why)
	pid, err := s.senderPID(sender)
	if err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return 0, dbus.MakeFailedError(err)
	}
	go s.follow(n, p[0], p[1], pid)
	return dbus.UnixFD(p[1]), nil
}

func (s *standin) senderPID(sender dbus.Sender) (int, error) {
	var pid uint32
	err := s.conn.BusObject().Call("org.freedesktop.DBus.GetConnectionUnixProcessID", 0, string(sender)).Store(&pid)
	return int(pid), err
}

// follow waits until the caller's process holds the write end (the reply
// carried it), closes this process's copy, and reads until EOF: the
// caller closed its copy, or exited.
func (s *standin) follow(n, r, w, pid int) {
	defer unix.Close(r)
	var st unix.Stat_t
	if err := unix.Fstat(r, &st); err != nil {
		s.say("error fstat %v", err)
		return
	}
	link := fmt.Sprintf("pipe:[%d]", st.Ino)
	for !holds(pid, link) {
		if unix.Kill(pid, 0) != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	unix.Close(w)
	s.say("held %d", n)
	buf := make([]byte, 16)
	for {
		k, err := unix.Read(r, buf)
		if err == unix.EINTR {
			continue
		}
		if k <= 0 {
			break
		}
	}
	// Said before the delay can end on it: a shutdown waiting on freed
	// says "delay-done" as soon as it is sent, and the tests read the
	// order of the two.
	s.say("released %d", n)
	s.mu.Lock()
	delete(s.held, n)
	if len(s.held) == 0 {
		select {
		case s.freed <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
}

// holds says whether process pid has a descriptor on link.
func holds(pid int, link string) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && target == link {
			return true
		}
	}
	return false
}

// KillUnit is systemd's; SIGHUP to logind rereads its drop-ins.
func (s *standin) KillUnit(unit, who string, signal int32) *dbus.Error {
	if unit != "systemd-logind.service" || signal != int32(unix.SIGHUP) {
		return dbus.MakeFailedError(fmt.Errorf("the stand-in only reloads systemd-logind.service on SIGHUP, got %s %s %d", unit, who, signal))
	}
	files, _ := filepath.Glob(filepath.Join(s.confDir, "*.conf"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "InhibitDelayMaxSec="); ok {
				if sec, err := strconv.ParseUint(v, 10, 64); err == nil {
					s.props.SetMust(logindIface, "InhibitDelayMaxUSec", sec*1000000)
				}
			}
		}
	}
	usec, _ := s.props.Get(logindIface, "InhibitDelayMaxUSec")
	s.say("reload %v", usec.Value())
	return nil
}

func main() {
	address := flag.String("address", "", "the bus's address")
	delay := flag.Duration("delay", 5*time.Second, "InhibitDelayMaxUSec at start (logind's default is 5s)")
	confDir := flag.String("conf-dir", "", "logind's drop-in directory, read on reload")
	flag.Parse()
	if err := run(*address, *delay, *confDir); err != nil {
		fmt.Fprintln(os.Stderr, "logind-standin:", err)
		os.Exit(1)
	}
}

func run(address string, delay time.Duration, confDir string) error {
	conn, err := dbus.Connect(address)
	if err != nil {
		return err
	}
	defer conn.Close()
	s := &standin{conn: conn, confDir: confDir, out: bufio.NewWriter(os.Stdout), held: map[int]bool{}, freed: make(chan struct{}, 1)}
	if err := conn.ExportMethodTable(map[string]any{"Inhibit": s.Inhibit}, logindPath, logindIface); err != nil {
		return err
	}
	if err := conn.ExportMethodTable(map[string]any{"KillUnit": s.KillUnit}, systemdPath, "org.freedesktop.systemd1.Manager"); err != nil {
		return err
	}
	if s.props, err = prop.Export(conn, logindPath, prop.Map{logindIface: {
		"InhibitDelayMaxUSec": {Value: uint64(delay / time.Microsecond), Emit: prop.EmitTrue},
	}}); err != nil {
		return err
	}
	for _, name := range []string{logindName, systemdName} {
		if reply, err := conn.RequestName(name, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
			return fmt.Errorf("owning %s: %v (reply %v)", name, err, reply)
		}
	}
	s.say("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "prepare true":
			s.prepare(true)
		case "prepare false":
			s.prepare(false)
		default:
			s.say("error unknown command %q", in.Text())
		}
	}
	return nil
}

// prepare emits PrepareForShutdown and, for a shutdown, waits as logind
// does for the delay locks, at most InhibitDelayMaxUSec.
func (s *standin) prepare(active bool) {
	if err := s.conn.Emit(logindPath, logindIface+".PrepareForShutdown", active); err != nil {
		s.say("error emitting PrepareForShutdown: %v", err)
		return
	}
	s.say("prepare %t", active)
	if !active {
		return
	}
	s.mu.Lock()
	select { // a release from before this shutdown
	case <-s.freed:
	default:
	}
	waiting := len(s.held) > 0
	s.mu.Unlock()
	if !waiting {
		s.say("delay-done")
		return
	}
	usec, _ := s.props.Get(logindIface, "InhibitDelayMaxUSec")
	select {
	case <-s.freed:
		s.say("delay-done")
	case <-time.After(time.Duration(usec.Value().(uint64)) * time.Microsecond):
		s.say("delay-over")
	}
}
