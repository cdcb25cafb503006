// Command pause is PID 1 of every pod sandbox on a devnode: it holds the
// sandbox's namespaces open, reaps the zombies that containers sharing its
// PID namespace leave behind, and exits 0 on SIGTERM or SIGINT, as the
// upstream pause container does. It is built statically (CGO_ENABLED=0) into
// the image localhost/pause:1; see internal/devnode.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			reapChildren()
			continue
		}
		os.Exit(0)
	}
}

// reapChildren collects every exited child. Signals coalesce, so one SIGCHLD
// may stand for several exits.
func reapChildren() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
