package lastresort

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// StartCommand starts cmd with SIGKILL as its parent-death signal, so that
// it dies with the test binary even when that is SIGKILLed and the
// watchdog never runs. Other SysProcAttr fields (Setpgid) are kept.
//
// Linux sends the signal when the thread that forked the child exits, not
// the process, and Go ends a thread whenever a goroutine locked to it
// returns without unlocking (netlink and netns code does that on purpose).
// So every start forks from one thread that a goroutine holds locked for
// the life of the binary.
func StartCommand(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	forkOnce.Do(func() {
		forkCalls = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must outlive every child
			for call := range forkCalls {
				call()
			}
		}()
	})
	errc := make(chan error, 1)
	forkCalls <- func() { errc <- cmd.Start() }
	return <-errc
}

var (
	forkOnce  sync.Once
	forkCalls chan func()
)
