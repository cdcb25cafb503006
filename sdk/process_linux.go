package sdk

import (
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nameProcess sets the process's short name (comm) to its binary's name.
// The core execs a checked binary through /proc/self/fd/N, which leaves the
// fd number as comm, so top, `ps -e` and pgrep would not find the plugin.
// The kernel keeps 15 bytes.
func nameProcess() {
	name := filepath.Base(os.Args[0])
	if len(name) > 15 {
		name = name[:15]
	}
	b, err := unix.BytePtrFromString(name)
	if err != nil {
		return
	}
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(b)), 0, 0, 0)
}
