package devnode

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// DropFromPageCache writes back and drops the files' pages from the page
// cache, so that an agent started from them runs as on a node just
// booted: its binaries read from disk at page faults, in small folios. A
// binary just written or read sits in the page cache in large folios (up
// to 2 MB), and a kernel that maps a whole folio at a fault makes a
// process map several times the code it touches, which would weigh on the
// PSS of whichever agent's binaries were written last
// (docs/performance.md, Memory).
func DropFromPageCache(paths ...string) error {
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		err = f.Sync()
		if err == nil {
			err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("drop %s from the page cache: %w", path, err)
		}
	}
	return nil
}
