//go:build unix

package stdoutguard

import (
	"os"

	"golang.org/x/sys/unix"
)

// redirectStdout duplicates standard output to a new descriptor, points
// descriptor 1 at standard error, and returns the duplicate. If either step
// fails, stdout is left as it was and nil is returned.
func redirectStdout() *os.File {
	fd, err := unix.Dup(1)
	if err != nil {
		return nil
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup2(2, 1); err != nil {
		_ = unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), "/dev/stdout")
}
