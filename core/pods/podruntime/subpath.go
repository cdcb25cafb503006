package podruntime

import (
	"errors"
	"fmt"
	"github.com/microlet/microlet/core/pods/podspec"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// volumeSubPath is a mount's subPath, or its subPathExpr expanded with the
// container's environment; it must stay inside the volume.
func volumeSubPath(vm v1.VolumeMount, envs map[string]string) (string, error) {
	subPath := vm.SubPath
	if vm.SubPathExpr != "" {
		var missing []string
		subPath = podspec.Expand(vm.SubPathExpr, func(name string) (string, bool) {
			value, ok := envs[name]
			if !ok || value == "" {
				missing = append(missing, name)
			}
			return value, true
		})
		if len(missing) > 0 {
			slices.Sort(missing)
			return "", fmt.Errorf("missing value for %s", strings.Join(slices.Compact(missing), ", "))
		}
	}
	if subPath == "" {
		return "", nil
	}
	if filepath.IsAbs(subPath) {
		return "", fmt.Errorf("error SubPath `%s` must not be an absolute path", subPath)
	}
	for _, part := range strings.Split(filepath.ToSlash(subPath), "/") {
		if part == ".." {
			return "", fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", subPath)
		}
	}
	return subPath, nil
}

// prepareSubPath makes a volume's subPath safe to hand to the runtime, as
// upstream's PrepareSafeSubpath: it opens the path inside the volume without
// following symlinks out of it (creating a missing directory with the
// volume's mode), and bind-mounts what it opened under the pod's
// volume-subpaths directory. The runtime gets the bind mount, so a container
// that swaps a symlink into the volume after the check cannot make it mount
// something else.
func (v *volumeManager) prepareSubPath(uid types.UID, containerName string, index int, volumeName, volumePath, subPath string) (string, error) {
	root, err := os.OpenRoot(volumePath)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := makeSubPathDirs(root, volumePath, subPath); err != nil {
		return "", err
	}
	f, err := root.OpenFile(subPath, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	target := filepath.Join(v.podDir(uid), podSubPathsDirName, volumeName, containerName, strconv.Itoa(index))
	points, err := v.mountPoints()
	if err != nil {
		return "", err
	}
	if slices.Contains(points, target) {
		// Left by the container's previous instance: bind afresh, the
		// subPath may point elsewhere now.
		if err := v.unmount(target); err != nil {
			return "", err
		}
	}
	if err := makeMountTarget(target, fi.IsDir()); err != nil {
		return "", err
	}
	source := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if err := v.mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return "", fmt.Errorf("bind-mounting the subPath on %s: %w", target, err)
	}
	return target, nil
}

// makeSubPathDirs creates the missing directories of subPath inside the
// volume with the volume's mode, whatever the umask: a group that may write
// the volume (fsGroup) may write them too.
func makeSubPathDirs(root *os.Root, volumePath, subPath string) error {
	fi, err := os.Stat(volumePath)
	if err != nil {
		return err
	}
	path := ""
	for _, part := range strings.Split(filepath.Clean(subPath), string(filepath.Separator)) {
		path = filepath.Join(path, part)
		if _, err := root.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			continue // there already (or unreadable, which opening it will tell)
		}
		if err := root.Mkdir(path, fi.Mode().Perm()); err != nil {
			return err
		}
		if err := root.Chmod(path, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

// makeMountTarget makes the directory or empty file a bind mount goes on.
func makeMountTarget(target string, dir bool) error {
	if dir {
		return os.MkdirAll(target, 0o750)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}
