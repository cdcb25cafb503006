package podruntime

import (
	"fmt"
	v1 "k8s.io/api/core/v1"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// The layout of a pod's directories under RootDir, as the kubelet's under
// its root directory.
const (
	podsDirName          = "pods"
	podVolumesDirName    = "volumes"
	podContainersDirName = "containers"
	podSubPathsDirName   = "volume-subpaths"
	podEtcHostsName      = "etc-hosts"
	// logPathDelimiter joins a pod log directory's parts.
	logPathDelimiter = "_"
	// maxLogFileNameLen is ext4's limit on a file name, which the
	// /var/log/containers symlink names are cut to and a pod's log
	// directory name must keep to.
	maxLogFileNameLen = 255
)

// podDir is <RootDir>/pods/<uid>.
func podDir(rootDir string, uid types.UID) string {
	return filepath.Join(rootDir, podsDirName, string(uid))
}

func (m *Manager) podDir(uid types.UID) string {
	return podDir(m.opts.RootDir, uid)
}

// podContainerDir holds a container's termination message files.
func (m *Manager) podContainerDir(uid types.UID, containerName string) string {
	return filepath.Join(m.podDir(uid), podContainersDirName, containerName)
}

func (m *Manager) podEtcHostsPath(uid types.UID) string {
	return filepath.Join(m.podDir(uid), podEtcHostsName)
}

// podLogsDir is a sandbox's log directory, <PodLogsDir>/<ns>_<name>_<uid>.
func (m *Manager) podLogsDir(namespace, name string, uid types.UID) string {
	return filepath.Join(m.opts.PodLogsDir, podLogsDirName(namespace, name, uid))
}

func podLogsDirName(namespace, name string, uid types.UID) string {
	return strings.Join([]string{namespace, name, string(uid)}, logPathDelimiter)
}

// CheckPodLogsDirName refuses a pod whose log directory's name would not fit
// in a file name: a valid pod name has up to 253 characters, and with its
// namespace and UID the name can pass the file system's limit, which would
// fail the sandbox's creation (ENAMETOOLONG) for as long as the pod exists.
// The kubelet has the same layout and fails the same way, at every sync.
func CheckPodLogsDirName(pod *v1.Pod) error {
	name := podLogsDirName(pod.Namespace, pod.Name, pod.UID)
	if len(name) <= maxLogFileNameLen {
		return nil
	}
	maxName := maxLogFileNameLen - (len(name) - len(pod.Name))
	return fmt.Errorf("the pod's log directory name %s_<name>_%s would have %d characters, over the file system's limit of %d: "+
		"the pod name may have at most %d characters in namespace %q", pod.Namespace, pod.UID, len(name), maxLogFileNameLen, maxName, pod.Namespace)
}

// containerLogPath is a container instance's log file relative to its
// sandbox's log directory: <name>/<restartCount>.log.
func containerLogPath(containerName string, restartCount int) string {
	return filepath.Join(containerName, fmt.Sprintf("%d.log", restartCount))
}

// containerLogSymlink is the /var/log/containers link to a container's log:
// <pod>_<namespace>_<container>-<id>.log, cut to ext4's name limit.
func (m *Manager) containerLogSymlink(podName, podNamespace, containerName, containerID string) string {
	const suffix = ".log"
	name := fmt.Sprintf("%s_%s_%s-%s", podName, podNamespace, containerName, containerID)
	if len(name) > maxLogFileNameLen-len(suffix) {
		name = name[:maxLogFileNameLen-len(suffix)]
	}
	return filepath.Join(m.opts.ContainerLogsDir, name+suffix)
}

// EmptyDirPath is where a pod's emptyDir volume lives on the node.
func (m *Manager) EmptyDirPath(pod *v1.Pod, volume string) string {
	return m.volumes.emptyDirPath(pod.UID, volume)
}

// LogDirectory is the pod's log directory, <PodLogsDir>/<ns>_<name>_<uid>.
func (m *Manager) LogDirectory(pod *v1.Pod) string {
	return m.podLogsDir(pod.Namespace, pod.Name, pod.UID)
}
