// Package atomicfile replaces files so that a crash leaves either the old
// content or the new, never a part: state and checkpoint files that the
// next start reads.
package atomicfile

import (
	"os"
	"path/filepath"
)

// WriteFile replaces path with data, mode perm: written to a temporary
// file in the same directory, synced, renamed over path, and the
// directory synced so that the rename survives a crash too.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone by the rename on success
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
