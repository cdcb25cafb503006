package imagegc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/runtime/logrotation"
)

// logPathDelimiter joins the parts of a pod log directory's name,
// <namespace>_<name>_<uid>; none of the three may hold it.
const logPathDelimiter = "_"

// removeContainerLogs removes a removed container's log file and its
// rotations (upstream removeContainerLog). For a deleted pod the
// container's log directory goes with it: no later instance will write
// there. Paths outside PodLogsDir are never touched.
func (m *Manager) removeContainerLogs(logPath string, podDeleted bool) error {
	if logPath == "" || !m.inPodLogsDir(logPath) {
		return nil
	}
	if podDeleted {
		dir := filepath.Dir(logPath)
		if !m.inPodLogsDir(dir) {
			return nil
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing container log directory %s: %w", dir, err)
		}
		return nil
	}
	files, err := logrotation.Files(logPath)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		if err := os.RemoveAll(f); err != nil {
			errs = append(errs, fmt.Errorf("removing container log %s: %w", f, err))
		}
	}
	return errors.Join(errs...)
}

// removePodLogDirs removes the log directories of deleted pods the runtime
// has nothing of any more (upstream evictPodLogsDirectories); left counts
// what the runtime still has per pod UID.
func (m *Manager) removePodLogDirs(left map[string]int) error {
	entries, err := os.ReadDir(m.opts.PodLogsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the pod logs directory: %w", err)
	}
	var errs []error
	for _, e := range entries {
		uid := podUIDFromLogDir(e.Name())
		if !e.IsDir() || uid == "" || left[uid] > 0 || !m.opts.Pods.PodDeleted(types.UID(uid)) {
			continue
		}
		dir := filepath.Join(m.opts.PodLogsDir, e.Name())
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("removing the log directory of deleted pod %s: %w", uid, err))
			continue
		}
		m.log.Debug("removed the log directory of a deleted pod", "dir", dir)
	}
	return errors.Join(errs...)
}

// podUIDFromLogDir is the UID in a pod log directory's name, "" when the
// name is not one.
func podUIDFromLogDir(name string) string {
	parts := strings.Split(name, logPathDelimiter)
	if len(parts) != 3 || parts[2] == "" {
		return ""
	}
	return parts[2]
}

// removeDanglingLogLinks removes the /var/log/containers symlinks into the
// pod logs directory whose log is gone (upstream removes dead containers'
// symlinks in evictPodLogsDirectories).
func (m *Manager) removeDanglingLogLinks() error {
	if m.opts.ContainerLogsDir == "" {
		return nil
	}
	entries, err := os.ReadDir(m.opts.ContainerLogsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the container logs directory: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		link := filepath.Join(m.opts.ContainerLogsDir, e.Name())
		target, err := os.Readlink(link)
		if err != nil || !m.inPodLogsDir(target) {
			continue
		}
		if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing dangling log symlink %s: %w", link, err))
		}
	}
	return errors.Join(errs...)
}

// inPodLogsDir says whether path lies strictly inside PodLogsDir.
func (m *Manager) inPodLogsDir(path string) bool {
	rel, err := filepath.Rel(m.opts.PodLogsDir, filepath.Clean(path))
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
