package podruntime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/cluster/events"
)

const (
	// emptyDirPluginDir is the kubelet's directory for emptyDir volumes
	// under a pod's volumes directory.
	emptyDirPluginDir = "kubernetes.io~empty-dir"
	// emptyDirPerm lets any user a container runs as write an emptyDir.
	emptyDirPerm os.FileMode = 0o777
)

// volumeManager sets up the volumes a container mounts and tears down what
// a pod left: emptyDir, hostPath and downwardAPI everywhere; configMap,
// secret and projected ones with sources, on a node of a cluster.
type volumeManager struct {
	rootDir     string
	allocatable func() v1.ResourceList
	sources     VolumeSources // nil on a standalone node
	// events gets upstream's FailedMount for a volume that cannot be set up.
	events events.Recorder
	// book counts the volumes and times their set-ups and teardowns.
	book *volumeBook
	now  func() time.Time
	// The host operations, replaced in unit tests.
	mount       func(source, target, fstype string, flags uintptr, data string) error
	unmount     func(target string) error
	mountPoints func() ([]string, error)
}

func newVolumeManager(rootDir string, allocatable func() v1.ResourceList, sources VolumeSources, recorder events.Recorder, now func() time.Time) *volumeManager {
	return &volumeManager{
		rootDir:     rootDir,
		allocatable: allocatable,
		sources:     sources,
		events:      recorder,
		book:        newVolumeBook(),
		now:         now,
		mount:       unix.Mount,
		unmount:     func(target string) error { return unix.Unmount(target, 0) },
		mountPoints: readMountPoints,
	}
}

func (v *volumeManager) podDir(uid types.UID) string {
	return podDir(v.rootDir, uid)
}

// emptyDirPath is where an emptyDir volume lives on the node.
func (v *volumeManager) emptyDirPath(uid types.UID, volume string) string {
	return filepath.Join(v.podDir(uid), podVolumesDirName, emptyDirPluginDir, volume)
}

// containerMounts are the runtime mounts of c's volumeMounts: volumes set
// up, subPaths prepared, propagation translated. envs expand subPathExpr.
func (v *volumeManager) containerMounts(pod *v1.Pod, c *v1.Container, envs map[string]string) ([]*runtimeapi.Mount, error) {
	var mounts []*runtimeapi.Mount
	for i, vm := range c.VolumeMounts {
		vol := podVolume(pod, vm.Name)
		if vol == nil {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", vm.Name, c.Name)
		}
		hostPath, readOnly, err := v.setUp(pod, vol)
		if err != nil {
			v.events.Eventf(pod, v1.EventTypeWarning, events.FailedMountVolume, "MountVolume.SetUp failed for volume %q : %v", vm.Name, err)
			return nil, fmt.Errorf("volume %q of container %q: %w", vm.Name, c.Name, err)
		}
		subPath, err := volumeSubPath(vm, envs)
		if err != nil {
			return nil, fmt.Errorf("volumeMount %q of container %q: %w", vm.Name, c.Name, err)
		}
		if subPath != "" {
			if hostPath, err = v.prepareSubPath(pod.UID, c.Name, i, vm.Name, hostPath, subPath); err != nil {
				return nil, fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q: %w", vm.Name, c.Name, err)
			}
		}
		propagation, err := mountPropagation(vm.MountPropagation)
		if err != nil {
			return nil, fmt.Errorf("volumeMount %q of container %q: %w", vm.Name, c.Name, err)
		}
		if vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly == v1.RecursiveReadOnlyEnabled {
			return nil, fmt.Errorf("volumeMount %q of container %q: recursiveReadOnly Enabled is not supported; use IfPossible or Disabled", vm.Name, c.Name)
		}
		mounts = append(mounts, &runtimeapi.Mount{
			ContainerPath: vm.MountPath,
			HostPath:      hostPath,
			Readonly:      vm.ReadOnly || readOnly,
			Propagation:   propagation,
		})
	}
	return mounts, nil
}

func podVolume(pod *v1.Pod, name string) *v1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

// setUp makes a volume ready and returns its path on the node, and whether
// it is always mounted read-only (the projected kinds, whose files the
// node writes, as upstream). The projected kinds were written by
// setUpPodVolumes before; on a standalone node, those showing API objects
// fail the container (CreateContainerConfigError) with the reason.
func (v *volumeManager) setUp(pod *v1.Pod, vol *v1.Volume) (string, bool, error) {
	switch {
	case vol.EmptyDir != nil:
		first, start := !v.book.mounted(pod.UID, vol.Name), time.Now()
		path, err := v.setUpEmptyDir(pod, vol)
		if first {
			v.book.mount(pod, vol, start, err)
		}
		return path, false, err
	case vol.HostPath != nil:
		first, start := !v.book.mounted(pod.UID, vol.Name), time.Now()
		path := filepath.Clean(vol.HostPath.Path)
		var err error
		if vol.HostPath.Type != nil {
			err = checkHostPathType(path, *vol.HostPath.Type)
		}
		if first {
			v.book.mount(pod, vol, start, err)
		}
		if err != nil {
			return "", false, err
		}
		return path, false, nil
	case projectedPluginDirOf(vol) != "":
		if !v.canSetUp(vol) {
			return "", false, errStandalone
		}
		path := v.projectedVolumePath(pod.UID, vol)
		if _, err := os.Lstat(filepath.Join(path, atomicDataDir)); err != nil {
			return "", false, fmt.Errorf("the volume is not set up: %w", err)
		}
		return path, true, nil
	}
	return "", false, errors.New("only emptyDir, hostPath, configMap, secret, downwardAPI and projected volumes are supported on this node")
}

// setUpEmptyDir makes the volume's directory, and mounts a tmpfs on it for
// medium Memory, once; with the pod's fsGroup, the volume is given to it.
func (v *volumeManager) setUpEmptyDir(pod *v1.Pod, vol *v1.Volume) (string, error) {
	dir := v.emptyDirPath(pod.UID, vol.Name)
	if err := os.MkdirAll(dir, emptyDirPerm); err != nil {
		return "", err
	}
	// MkdirAll's mode is subject to the umask. Only the permission bits are
	// set, as upstream's setupDir: the setgid bit of fsGroup ownership stays.
	info, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	if info.Mode().Perm() != emptyDirPerm {
		if err := os.Chmod(dir, info.Mode()&^os.ModePerm|emptyDirPerm); err != nil {
			return "", err
		}
	}
	switch vol.EmptyDir.Medium {
	case v1.StorageMediumDefault:
	case v1.StorageMediumMemory:
		if err := v.mountTmpfsOnce(dir, emptyDirMemorySize(pod, vol.EmptyDir.SizeLimit, v.allocatable())); err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("emptyDir medium %q is not supported; want \"\" or %q", vol.EmptyDir.Medium, v1.StorageMediumMemory)
	}
	if psc := pod.Spec.SecurityContext; psc != nil && psc.FSGroup != nil {
		if err := setVolumeOwnership(dir, *psc.FSGroup); err != nil {
			return "", fmt.Errorf("giving the volume to fsGroup %d: %w", *psc.FSGroup, err)
		}
	}
	return dir, nil
}

// mountTmpfsOnce mounts a tmpfs of size bytes (0: the kernel's default) on
// dir unless one is there.
func (v *volumeManager) mountTmpfsOnce(dir string, size int64) error {
	points, err := v.mountPoints()
	if err != nil {
		return err
	}
	if slices.Contains(points, dir) {
		return nil
	}
	var options string
	if size > 0 {
		options = "size=" + strconv.FormatInt(size, 10)
	}
	if err := v.mount("tmpfs", dir, "tmpfs", 0, options); err != nil {
		return fmt.Errorf("mounting a tmpfs on %s: %w", dir, err)
	}
	return nil
}

// emptyDirMemorySize is the size of a memory-backed emptyDir, as upstream's
// calculateEmptyDirMemorySize: the node's allocatable memory, or the pod's
// memory limit when smaller, or the volume's sizeLimit when smaller still.
func emptyDirMemorySize(pod *v1.Pod, sizeLimit *resource.Quantity, allocatable v1.ResourceList) int64 {
	size := allocatable.Memory().Value()
	if limit, ok := podMemoryLimit(pod); ok && limit > 0 && (size == 0 || limit < size) {
		size = limit
	}
	if sizeLimit != nil && sizeLimit.Value() > 0 && (size == 0 || sizeLimit.Value() < size) {
		size = sizeLimit.Value()
	}
	return size
}

// podMemoryLimit is the memory limit of the pod's cgroup, known only when
// every container has one: the running containers and sidecars together,
// or an init container with the sidecars started before it, whichever is
// more.
func podMemoryLimit(pod *v1.Pod) (int64, bool) {
	var sidecars, peak int64
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		limit, ok := c.Resources.Limits[v1.ResourceMemory]
		if !ok {
			return 0, false
		}
		if isSidecar(c) {
			sidecars += limit.Value()
			peak = max(peak, sidecars)
		} else {
			peak = max(peak, sidecars+limit.Value())
		}
	}
	regular := sidecars
	for i := range pod.Spec.Containers {
		limit, ok := pod.Spec.Containers[i].Resources.Limits[v1.ResourceMemory]
		if !ok {
			return 0, false
		}
		regular += limit.Value()
	}
	return max(peak, regular), true
}

// checkHostPathType is upstream's hostPath type check: the path must be what
// the type says, and DirectoryOrCreate and FileOrCreate create it when
// missing.
func checkHostPathType(path string, t v1.HostPathType) error {
	fi, statErr := os.Stat(path)
	exists := statErr == nil
	isA := func(mode os.FileMode) bool { return exists && fi.Mode()&os.ModeType == mode }
	switch t {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		if !exists {
			return os.MkdirAll(path, 0o755)
		}
		fallthrough
	case v1.HostPathDirectory:
		if !isA(os.ModeDir) {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", path)
		}
	case v1.HostPathFileOrCreate:
		if !exists {
			f, err := os.OpenFile(path, os.O_CREATE, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		fallthrough
	case v1.HostPathFile:
		if !isA(0) {
			return fmt.Errorf("hostPath type check failed: %s is not a file", path)
		}
	case v1.HostPathSocket:
		if !isA(os.ModeSocket) {
			return fmt.Errorf("hostPath type check failed: %s is not a socket file", path)
		}
	case v1.HostPathCharDev:
		if !isA(os.ModeDevice | os.ModeCharDevice) {
			return fmt.Errorf("hostPath type check failed: %s is not a character device", path)
		}
	case v1.HostPathBlockDev:
		if !isA(os.ModeDevice) {
			return fmt.Errorf("hostPath type check failed: %s is not a block device", path)
		}
	default:
		return fmt.Errorf("%s is an invalid volume type", t)
	}
	return nil
}

// mountPropagation translates a volumeMount's propagation.
func mountPropagation(mode *v1.MountPropagationMode) (runtimeapi.MountPropagation, error) {
	switch {
	case mode == nil, *mode == v1.MountPropagationNone:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	case *mode == v1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, nil
	case *mode == v1.MountPropagationBidirectional:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, nil
	}
	return 0, fmt.Errorf("invalid MountPropagation mode: %q", *mode)
}

// machineCapacity is the node's CPUs and memory, what pods may use when
// nothing is reserved.
func machineCapacity() v1.ResourceList {
	list := v1.ResourceList{v1.ResourceCPU: *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI)}
	var info unix.Sysinfo_t
	if unix.Sysinfo(&info) == nil {
		list[v1.ResourceMemory] = *resource.NewQuantity(int64(info.Totalram)*int64(info.Unit), resource.BinarySI)
	}
	return list
}
