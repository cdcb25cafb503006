package shutdown

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
)

// logind's and systemd's names on the system bus (upstream's
// systemd/inhibit_linux.go).
const (
	logindService   = "org.freedesktop.login1"
	logindObject    = dbus.ObjectPath("/org/freedesktop/login1")
	logindInterface = "org.freedesktop.login1.Manager"
	systemdService  = "org.freedesktop.systemd1"
	systemdObject   = dbus.ObjectPath("/org/freedesktop/systemd1")
	systemdKillUnit = "org.freedesktop.systemd1.Manager.KillUnit"

	// DefaultLogindConfDir is where the override of InhibitDelayMaxSec
	// goes, under upstream's file name.
	DefaultLogindConfDir = "/etc/systemd/logind.conf.d"
	logindConfFile       = "99-kubelet.conf"
)

// logind is one connection to logind on the system bus.
type logind struct {
	conn    *dbus.Conn
	confDir string
}

// connectLogind connects to the system bus: address, or where
// DBUS_SYSTEM_BUS_ADDRESS says, or the standard socket.
func connectLogind(address, confDir string) (*logind, error) {
	var conn *dbus.Conn
	var err error
	if address == "" {
		conn, err = dbus.ConnectSystemBus()
	} else {
		conn, err = dbus.Connect(address)
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to the system bus: %w", err)
	}
	return &logind{conn: conn, confDir: confDir}, nil
}

func (l *logind) close() { l.conn.Close() }

// inhibitDelay is logind's InhibitDelayMaxUSec: the longest a delay lock
// holds a shutdown back.
func (l *logind) inhibitDelay() (time.Duration, error) {
	v, err := l.conn.Object(logindService, logindObject).GetProperty(logindInterface + ".InhibitDelayMaxUSec")
	if err != nil {
		return 0, fmt.Errorf("reading InhibitDelayMaxUSec from logind: %w", err)
	}
	usec, ok := v.Value().(uint64)
	if !ok {
		return 0, fmt.Errorf("InhibitDelayMaxUSec from logind is %T, not a uint64", v.Value())
	}
	return time.Duration(usec) * time.Microsecond, nil
}

// raiseInhibitDelay writes logind's drop-in setting InhibitDelayMaxSec to
// delay and has systemd send logind SIGHUP, which rereads its config, as
// upstream does.
func (l *logind) raiseInhibitDelay(delay time.Duration) error {
	if err := os.MkdirAll(l.confDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", l.confDir, err)
	}
	conf := fmt.Sprintf("# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=%.0f\n", delay.Seconds())
	path := filepath.Join(l.confDir, logindConfFile)
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("writing logind's inhibit delay override %s: %w", path, err)
	}
	call := l.conn.Object(systemdService, systemdObject).Call(systemdKillUnit, 0, "systemd-logind.service", "all", int32(unix.SIGHUP))
	if call.Err != nil {
		return fmt.Errorf("reloading logind's config: %w", call.Err)
	}
	return nil
}

// inhibit takes a delay lock on shutdown: logind waits for the returned
// descriptor to be closed (or InhibitDelayMaxUSec) before shutting down.
func (l *logind) inhibit() (int, error) {
	call := l.conn.Object(logindService, logindObject).Call(logindInterface+".Inhibit", 0,
		"shutdown", "kubelet", "Kubelet needs time to handle node shutdown", "delay")
	if call.Err != nil {
		return -1, fmt.Errorf("taking logind's shutdown inhibitor lock: %w", call.Err)
	}
	var fd dbus.UnixFD
	if err := call.Store(&fd); err != nil {
		return -1, fmt.Errorf("reading the inhibitor lock's descriptor: %w", err)
	}
	return int(fd), nil
}

// watch subscribes to PrepareForShutdown: true when the shutdown starts,
// false when it is cancelled. The channel closes with the connection.
func (l *logind) watch() (<-chan bool, error) {
	if err := l.conn.AddMatchSignal(dbus.WithMatchInterface(logindInterface), dbus.WithMatchMember("PrepareForShutdown"),
		dbus.WithMatchObjectPath(logindObject)); err != nil {
		return nil, fmt.Errorf("watching logind's PrepareForShutdown: %w", err)
	}
	signals := make(chan *dbus.Signal, 4)
	l.conn.Signal(signals)
	out := make(chan bool, 1)
	go func() {
		defer close(out)
		for s := range signals {
			if s.Name != logindInterface+".PrepareForShutdown" || len(s.Body) == 0 {
				continue
			}
			if active, ok := s.Body[0].(bool); ok {
				out <- active
			}
		}
	}()
	return out, nil
}
