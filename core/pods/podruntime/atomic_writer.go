package podruntime

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The layout of a volume written by atomicWriter, as upstream's AtomicWriter
// (pkg/volume/util/atomic_writer.go), which programs watching mounted
// configMaps rely on:
//
//	<dir>/..data -> ..2026_11_26_15_04_05.123456789
//	<dir>/..2026_11_26_15_04_05.123456789/<path>   the files
//	<dir>/<top> -> ..data/<top>                     for each top-level name
//
// A new version goes to a new timestamped directory and becomes visible at
// once when ..data is renamed over: readers never see half of an update.
const (
	atomicDataDir    = "..data"
	atomicNewDataDir = "..data_tmp"
	// atomicTSDirPrefix is a time.Format layout; MkdirTemp adds a random
	// suffix after it.
	atomicTSDirPrefix = "..2006_01_02_15_04_05."
	maxProjectedPath  = 4096
	maxProjectedName  = 255
)

// fileProjection is one file of a volume: its content, mode and, when
// set, owner and group.
type fileProjection struct {
	Data     []byte
	Mode     os.FileMode
	UID, GID *int64
}

// atomicWrite makes dir hold exactly payload (paths relative to dir),
// replacing the previous version at once. An unchanged payload writes
// nothing.
func atomicWrite(dir string, payload map[string]fileProjection, now time.Time) error {
	clean := make(map[string]fileProjection, len(payload))
	for p, f := range payload {
		if err := validateProjectedPath(p); err != nil {
			return err
		}
		clean[filepath.Clean(p)] = f
	}
	dataLink := filepath.Join(dir, atomicDataDir)
	oldTS, err := os.Readlink(dataLink)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", dataLink, err)
	}
	var oldTops map[string]bool
	if oldTS != "" {
		oldPaths, err := listFiles(filepath.Join(dir, oldTS))
		if err != nil {
			return err
		}
		same, err := sameFiles(filepath.Join(dir, oldTS), oldPaths, clean)
		if err != nil {
			return err
		}
		if same {
			// The user-visible links may still be missing (a crash
			// between the swap and their creation).
			return linkTopLevel(dir, clean)
		}
		oldTops = topLevelNames(oldPaths)
	}
	ts, err := os.MkdirTemp(dir, now.UTC().Format(atomicTSDirPrefix))
	if err != nil {
		return err
	}
	// Readable and searchable by whatever user the container runs as.
	if err := os.Chmod(ts, 0o755); err != nil {
		return errors.Join(err, os.RemoveAll(ts))
	}
	if err := writeFiles(ts, clean); err != nil {
		return errors.Join(err, os.RemoveAll(ts))
	}
	newLink := filepath.Join(dir, atomicNewDataDir)
	_ = os.Remove(newLink) // left by an interrupted write
	if err := os.Symlink(filepath.Base(ts), newLink); err != nil {
		return errors.Join(err, os.RemoveAll(ts))
	}
	if err := os.Rename(newLink, dataLink); err != nil {
		return errors.Join(err, os.Remove(newLink), os.RemoveAll(ts))
	}
	if err := linkTopLevel(dir, clean); err != nil {
		return err
	}
	newTops := topLevelNames(keys(clean))
	for top := range oldTops {
		if !newTops[top] {
			if err := os.RemoveAll(filepath.Join(dir, top)); err != nil {
				return err
			}
		}
	}
	if oldTS != "" {
		return os.RemoveAll(filepath.Join(dir, oldTS))
	}
	return nil
}

// validateProjectedPath is upstream's validatePath: relative, no "..",
// not starting with "..", within the length limits.
func validateProjectedPath(p string) error {
	switch {
	case p == "":
		return errors.New("invalid path: must not be empty")
	case filepath.IsAbs(p):
		return fmt.Errorf("invalid path: must be relative path: %s", p)
	case len(p) > maxProjectedPath:
		return fmt.Errorf("invalid path: must be less than or equal to %d characters", maxProjectedPath)
	}
	parts := strings.Split(p, "/")
	for _, part := range parts {
		if part == ".." {
			return fmt.Errorf("invalid path: must not contain '..': %s", p)
		}
		if len(part) > maxProjectedName {
			return fmt.Errorf("invalid path: filenames must be less than or equal to %d characters", maxProjectedName)
		}
	}
	if strings.HasPrefix(parts[0], "..") && len(parts[0]) > 2 {
		return fmt.Errorf("invalid path: must not start with '..': %s", p)
	}
	return nil
}

// listFiles are the regular files under dir, relative to it.
func listFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		files = append(files, rel)
		return err
	})
	return files, err
}

// sameFiles reports whether dir holds exactly payload's files, contents and
// modes.
func sameFiles(dir string, have []string, payload map[string]fileProjection) (bool, error) {
	if len(have) != len(payload) {
		return false, nil
	}
	for _, rel := range have {
		want, ok := payload[rel]
		if !ok {
			return false, nil
		}
		path := filepath.Join(dir, rel)
		fi, err := os.Lstat(path)
		if err != nil {
			return false, err
		}
		if fi.Mode().Perm() != want.Mode.Perm() {
			return false, nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return false, err
		}
		if !bytes.Equal(data, want.Data) {
			return false, nil
		}
	}
	return true, nil
}

func writeFiles(dir string, payload map[string]fileProjection) error {
	for rel, f := range payload {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, f.Data, f.Mode); err != nil {
			return err
		}
		if err := chownFile(path, f); err != nil {
			return err
		}
		// WriteFile's mode is subject to the umask; chown may clear bits.
		if err := os.Chmod(path, f.Mode); err != nil {
			return err
		}
	}
	return nil
}

// linkTopLevel makes <dir>/<top> -> ..data/<top> for each top-level name.
func linkTopLevel(dir string, payload map[string]fileProjection) error {
	for top := range topLevelNames(keys(payload)) {
		link := filepath.Join(dir, top)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(atomicDataDir, top), link); err != nil {
			return err
		}
	}
	return nil
}

func topLevelNames(paths []string) map[string]bool {
	tops := make(map[string]bool, len(paths))
	for _, p := range paths {
		top, _, _ := strings.Cut(p, "/")
		tops[top] = true
	}
	return tops
}

func keys(payload map[string]fileProjection) []string {
	out := make([]string, 0, len(payload))
	for k := range payload {
		out = append(out, k)
	}
	return out
}
