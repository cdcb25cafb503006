package podsource

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pods/podspec"
)

// manifestState is what the file source knows of one manifest file.
type manifestState struct {
	// digest identifies what was last read (content or read error), so an
	// unchanged file is neither parsed nor reported again.
	digest [sha256.Size]byte
	// good is the last pod the file held that could be used; it keeps
	// running while the file is broken.
	good *v1.Pod
	// broken says the current content is not usable.
	broken bool
}

// scan reads the static pod path and returns the pods it holds. Unless
// settled, manifests that do not decode are left as they were and deferred
// is true. ok is false when the path could not be read at all, and the last
// set stands.
func (f *File) scan(settled bool) (pods []*v1.Pod, deferred, ok bool) {
	files, err := f.manifestFiles()
	if err != nil {
		f.reportPathError(err)
		return nil, false, false
	}
	f.reportPathError(nil)
	present := make(map[string]bool, len(files))
	for _, path := range files {
		present[path] = true
		if !f.refresh(path, settled) {
			deferred = true
		}
		if st := f.manifests[path]; st != nil && st.good != nil {
			pods = append(pods, st.good)
		}
	}
	for path := range f.manifests {
		if !present[path] {
			delete(f.manifests, path) // removed: its pod goes
		}
	}
	return pods, deferred, true
}

// manifestFiles lists the manifest files of the static pod path, sorted: the
// path itself when it is a file, else its regular files (following
// symlinks), skipping names that start with a dot and subdirectories, as
// upstream's file source does. A missing path holds no manifests.
func (f *File) manifestFiles() ([]string, error) {
	info, err := os.Stat(f.cfg.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case info.Mode().IsRegular():
		return []string{f.cfg.Path}, nil
	case !info.IsDir():
		return nil, fmt.Errorf("static pod path %s is neither a directory nor a regular file", f.cfg.Path)
	}
	entries, err := os.ReadDir(f.cfg.Path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(f.cfg.Path, e.Name())
		if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() {
			files = append(files, path)
		}
	}
	slices.Sort(files)
	return files, nil
}

// refresh re-reads one manifest and, if it changed, decodes it. A broken
// manifest is reported once per change and keeps its last good pod. Unless
// settled, a manifest that does not decode may be half-written: it is left
// as it was, unreported, and refresh returns false.
func (f *File) refresh(path string, settled bool) bool {
	data, readErr := readFile(path)
	digest := sha256.Sum256(data)
	if readErr != nil {
		digest = sha256.Sum256([]byte("unreadable: " + readErr.Error()))
	}
	st := f.manifests[path]
	if st != nil && st.digest == digest {
		return true
	}

	var good *v1.Pod
	var warnings []podspec.Problem
	err := readErr
	if err == nil {
		good, warnings, err = f.load(path, data)
	}
	if err != nil && !settled {
		return false
	}
	if st == nil {
		st = &manifestState{}
		f.manifests[path] = st
	}
	st.digest = digest
	if len(warnings) > 0 {
		f.log.Warn("static pod manifest has fields that are ignored", "path", path, "warnings", joinProblems(warnings))
	}
	if err != nil {
		st.broken = true
		f.errors.WithLabelValues(FileSource, path).Inc()
		if st.good != nil {
			f.log.Error("static pod manifest is broken; its last good pod keeps running until the file is fixed or removed",
				"path", path, "pod", podRef(st.good), "error", err)
		} else {
			f.log.Error("static pod manifest is broken; no pod runs from it", "path", path, "error", err)
		}
		return true
	}
	if st.broken {
		f.log.Info("static pod manifest is usable again", "path", path, "pod", podRef(good))
	}
	st.broken = false
	st.good = good
	return true
}

// load decodes and prepares the pod of one manifest file; warnings name
// the fields it ignores.
func (f *File) load(path string, data []byte) (_ *v1.Pod, warnings []podspec.Problem, _ error) {
	m, err := podspec.DecodePod(data)
	if err != nil {
		return nil, nil, err
	}
	pod, err := m.Prepare(0, podspec.FileOrigin(f.cfg.NodeName, path))
	return pod, m.Warnings, err
}

func readFile(path string) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return podspec.ReadManifest(file)
}

// reportPathError logs a failure to read the static pod path when it starts
// or changes, and its end.
func (f *File) reportPathError(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg == f.pathError {
		return
	}
	switch {
	case err != nil:
		f.log.Error("cannot read the static pod path; its pods stay as they were", "path", f.cfg.Path, "error", err)
	default:
		f.log.Info("the static pod path is readable again", "path", f.cfg.Path)
	}
	f.pathError = msg
}

func joinProblems(problems []podspec.Problem) string {
	parts := make([]string, len(problems))
	for i, p := range problems {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

// podRef names a pod as namespace/name in logs.
func podRef(pod *v1.Pod) string {
	return pod.Namespace + "/" + pod.Name
}
