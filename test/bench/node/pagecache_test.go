//go:build e2e

package nodebench

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// dropFromPageCache writes back and drops the files' pages from the page
// cache, so that an agent starts as on a node just booted: its binaries
// read from disk at page faults, in small folios. A binary just written
// (the copy microletBinaries makes) or read sits in the page cache in
// large folios, up to 2 MB, and this kernel (6.18) maps a whole folio at a
// fault: a process running it then maps several times the code it
// touches (the core: 31 MB at 30 pods instead of 16 MB), and that would
// weigh on whichever agent's binaries were written last.
func dropFromPageCache(paths ...string) error {
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
