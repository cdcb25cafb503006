package lastresort

import (
	"os/exec"
	"syscall"

	"github.com/microlet/microlet/internal/forkthread"
)

// StartCommand starts cmd with SIGKILL as its parent-death signal, so that
// it dies with the test binary even when that is SIGKILLed and the
// watchdog never runs. Other SysProcAttr fields (Setpgid) are kept. It
// forks from internal/forkthread's thread, since the signal follows the
// forking thread, not the process.
func StartCommand(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return forkthread.Do(cmd.Start)
}
