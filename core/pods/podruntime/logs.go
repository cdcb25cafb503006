package podruntime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// restartCountLogName matches a container log's name, <restartCount>.log,
// possibly with a rotation suffix.
var restartCountLogName = regexp.MustCompile(`^(\d+)\.log(\..*)?$`)

// restartCountFromLogDir is the restart count a container gets when the
// runtime has no instance of it but its log directory has logs: one more
// than the highest restart count among them, so that a node whose runtime
// lost its state after a reboot does not write over 0.log (upstream's
// calcRestartCountByLogDir).
func restartCountFromLogDir(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	count := 0
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		match := restartCountLogName.FindStringSubmatch(e.Name())
		if match == nil {
			continue
		}
		n, err := strconv.Atoi(match[1])
		if err != nil {
			continue // digits too many for an int: not a log microlet wrote
		}
		count = max(count, n+1)
	}
	return count, nil
}

// linkContainerLog makes the /var/log/containers symlink to a started
// container's log, when the log exists (a runtime logging elsewhere would
// leave a dangling link).
func (m *Manager) linkContainerLog(sandbox *runtimeapi.PodSandboxConfig, config *runtimeapi.ContainerConfig, containerID string) {
	if m.opts.ContainerLogsDir == "" {
		return
	}
	target := filepath.Join(sandbox.LogDirectory, config.LogPath)
	if _, err := os.Stat(target); errors.Is(err, os.ErrNotExist) {
		return
	}
	meta := sandbox.GetMetadata()
	link := m.containerLogSymlink(meta.Name, meta.Namespace, config.GetMetadata().GetName(), containerID)
	if err := os.Symlink(target, link); err != nil {
		m.log.Warn("cannot link the container's log into the container logs directory",
			"link", link, "target", target, "container_id", containerID, "error", err)
	}
}

// unlinkContainerLog removes a container's /var/log/containers symlink.
func (m *Manager) unlinkContainerLog(podName, podNamespace, containerName, containerID string) error {
	if m.opts.ContainerLogsDir == "" {
		return nil
	}
	link := m.containerLogSymlink(podName, podNamespace, containerName, containerID)
	if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the log symlink of container %s: %w", containerID, err)
	}
	return nil
}

// unlinkPodLogs removes the /var/log/containers symlinks into a pod's log
// directory.
func (m *Manager) unlinkPodLogs(uid types.UID) error {
	if m.opts.ContainerLogsDir == "" {
		return nil
	}
	entries, err := os.ReadDir(m.opts.ContainerLogsDir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		link := filepath.Join(m.opts.ContainerLogsDir, e.Name())
		target, err := os.Readlink(link)
		if err != nil {
			continue // gone meanwhile
		}
		if m.isPodLogPath(target, uid) {
			if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// isPodLogPath reports whether path is inside the log directory of the pod
// with uid, <PodLogsDir>/<ns>_<name>_<uid>/.
func (m *Manager) isPodLogPath(path string, uid types.UID) bool {
	rel, err := filepath.Rel(m.opts.PodLogsDir, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return false
	}
	dir, _, _ := strings.Cut(rel, string(filepath.Separator))
	return strings.HasSuffix(dir, logPathDelimiter+string(uid))
}
