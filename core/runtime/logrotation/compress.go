package logrotation

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
)

// compress gzips a rotated log into <log>.gz through a temporary file,
// then removes the original: a crash leaves either the original or both
// (PlanRotation removes the leftover then), never a truncated .gz.
func compress(log string) error {
	in, err := os.Open(log)
	if err != nil {
		return fmt.Errorf("compressing log: %w", err)
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return fmt.Errorf("compressing log: %w", err)
	}
	tmp := log + tmpSuffix
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return fmt.Errorf("compressing log: %w", err)
	}
	defer os.Remove(tmp) // gone by rename on success
	w := gzip.NewWriter(out)
	_, err = io.Copy(w, in)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("compressing log %s: %w", log, err)
	}
	if err := os.Rename(tmp, log+compressSuffix); err != nil {
		return fmt.Errorf("compressing log: %w", err)
	}
	if err := os.Remove(log); err != nil {
		return fmt.Errorf("removing log after compressing it: %w", err)
	}
	return nil
}
