package podruntime

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeMountTable stands in for the host's mounts in unit tests.
type fakeMountTable struct {
	mu     sync.Mutex
	points []string
	// calls records mount calls as "fstype source target data".
	calls []string
}

// fakeMounts makes m's volume manager mount into a fake table.
func fakeMounts(m *Manager) *fakeMountTable {
	f := &fakeMountTable{}
	m.volumes.mount = func(source, target, fstype string, _ uintptr, data string) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.points = append(f.points, target)
		f.calls = append(f.calls, strings.TrimSpace(strings.Join([]string{fstype, source, target, data}, " ")))
		return nil
	}
	m.volumes.unmount = func(target string) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		i := slices.Index(f.points, target)
		if i < 0 {
			return errors.New("not mounted")
		}
		f.points = slices.Delete(f.points, i, i+1)
		return nil
	}
	m.volumes.mountPoints = func() ([]string, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return slices.Clone(f.points), nil
	}
	return f
}

func TestCheckHostPathType(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })

	for _, tc := range []struct {
		path    string
		t       v1.HostPathType
		wantErr string
	}{
		{path: dir, t: v1.HostPathUnset},
		{path: filepath.Join(dir, "nothing"), t: v1.HostPathUnset},
		{path: dir, t: v1.HostPathDirectory},
		{path: file, t: v1.HostPathDirectory, wantErr: "is not a directory"},
		{path: filepath.Join(dir, "missing"), t: v1.HostPathDirectory, wantErr: "is not a directory"},
		{path: filepath.Join(dir, "made", "deep"), t: v1.HostPathDirectoryOrCreate},
		{path: file, t: v1.HostPathDirectoryOrCreate, wantErr: "is not a directory"},
		{path: file, t: v1.HostPathFile},
		{path: dir, t: v1.HostPathFile, wantErr: "is not a file"},
		{path: filepath.Join(dir, "newfile"), t: v1.HostPathFileOrCreate},
		{path: filepath.Join(dir, "no-parent", "f"), t: v1.HostPathFileOrCreate, wantErr: "no such file or directory"},
		{path: sock, t: v1.HostPathSocket},
		{path: file, t: v1.HostPathSocket, wantErr: "is not a socket file"},
		{path: "/dev/null", t: v1.HostPathCharDev},
		{path: file, t: v1.HostPathCharDev, wantErr: "is not a character device"},
		{path: "/dev/null", t: v1.HostPathBlockDev, wantErr: "is not a block device"},
		{path: dir, t: "Weird", wantErr: "Weird is an invalid volume type"},
	} {
		t.Run(string(tc.t)+" "+filepath.Base(tc.path), func(t *testing.T) {
			err := checkHostPathType(tc.path, tc.t)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("checkHostPathType: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("checkHostPathType error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	if fi, err := os.Stat(filepath.Join(dir, "made", "deep")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Errorf("DirectoryOrCreate made %v, %v; want a directory with mode 0755", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "newfile")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("FileOrCreate made %v, %v; want a regular file", fi, err)
	}
}

func TestVolumeSubPath(t *testing.T) {
	envs := map[string]string{"POD": "web", "EMPTY": ""}
	for _, tc := range []struct {
		name    string
		vm      v1.VolumeMount
		want    string
		wantErr string
	}{
		{name: "none", vm: v1.VolumeMount{}},
		{name: "plain", vm: v1.VolumeMount{SubPath: "logs/app"}, want: "logs/app"},
		{name: "expression", vm: v1.VolumeMount{SubPathExpr: "logs/$(POD)"}, want: "logs/web"},
		{name: "expression with unknown variables", vm: v1.VolumeMount{SubPathExpr: "$(B)/$(A)/$(EMPTY)/$(A)"}, wantErr: "missing value for A, B, EMPTY"},
		{name: "absolute", vm: v1.VolumeMount{SubPath: "/etc"}, wantErr: "must not be an absolute path"},
		{name: "backsteps", vm: v1.VolumeMount{SubPath: "a/../../etc"}, wantErr: "must not contain '..'"},
		{name: "dots in names are fine", vm: v1.VolumeMount{SubPath: "a..b/c"}, want: "a..b/c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := volumeSubPath(tc.vm, envs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("volumeSubPath = %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("volumeSubPath = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestPrepareSubPath(t *testing.T) {
	m := newTestManager(t)
	mounts := fakeMounts(m)
	volume := filepath.Join(t.TempDir(), "vol")
	if err := os.MkdirAll(filepath.Join(volume, "existing"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(volume, "config.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(volume, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(volume, 0o770); err != nil {
		t.Fatal(err)
	}

	target, err := m.volumes.prepareSubPath("uid-1", "app", 0, "vol", volume, "new/dir")
	if err != nil {
		t.Fatal(err)
	}
	wantTarget := filepath.Join(m.podDir("uid-1"), "volume-subpaths", "vol", "app", "0")
	if target != wantTarget {
		t.Errorf("target %s, want %s", target, wantTarget)
	}
	if fi, err := os.Stat(filepath.Join(volume, "new", "dir")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o770 {
		t.Errorf("missing subPath made as %v, %v; want a directory with the volume's mode 0770", fi, err)
	}
	if fi, err := os.Stat(target); err != nil || !fi.IsDir() {
		t.Errorf("bind target for a directory: %v, %v", fi, err)
	}

	fileTarget, err := m.volumes.prepareSubPath("uid-1", "app", 1, "vol", volume, "config.txt")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fileTarget); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("bind target for a file: %v, %v; want a regular file", fi, err)
	}

	// The same mount again (a restarted container) binds afresh.
	if _, err := m.volumes.prepareSubPath("uid-1", "app", 0, "vol", volume, "existing"); err != nil {
		t.Fatal(err)
	}
	if n := len(mounts.calls); n != 3 || !strings.HasPrefix(mounts.calls[0], "/proc/self/fd/") {
		t.Errorf("mount calls %q; want 3 binds from /proc/self/fd", mounts.calls)
	}
	if got := slices.Clone(mounts.points); len(got) != 2 {
		t.Errorf("mount points %v, want the two targets once each", got)
	}

	if _, err := m.volumes.prepareSubPath("uid-1", "app", 2, "vol", volume, "escape/passwd"); err == nil {
		t.Error("a subPath through a symlink out of the volume was accepted")
	}
}

func TestEmptyDirMemory(t *testing.T) {
	m := newTestManager(t)
	mounts := fakeMounts(m)
	pod := testPod(func(p *v1.Pod) {
		size := resource.MustParse("64Mi")
		p.Spec.Volumes = []v1.Volume{{Name: "shm", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &size}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "shm", MountPath: "/dev/shm"}}
		p.Spec.Containers[1].VolumeMounts = []v1.VolumeMount{{Name: "shm", MountPath: "/dev/shm"}}
	})
	for i := range pod.Spec.Containers {
		if _, err := m.volumes.containerMounts(pod, &pod.Spec.Containers[i], nil); err != nil {
			t.Fatal(err)
		}
	}
	dir := m.volumes.emptyDirPath(pod.UID, "shm")
	want := []string{"tmpfs tmpfs " + dir + " size=67108864"}
	if diff := cmp.Diff(want, mounts.calls); diff != "" {
		t.Errorf("tmpfs mounted once, sized by sizeLimit (-want +got):\n%s", diff)
	}
}

func TestEmptyDirMemorySize(t *testing.T) {
	allocatable := v1.ResourceList{v1.ResourceMemory: resource.MustParse("8Gi")}
	limited := func(limits ...string) *v1.Pod {
		pod := testPod(withInitContainers(sidecar("side"), testContainer("init")))
		all := append(pod.Spec.InitContainers, pod.Spec.Containers...)
		for i, l := range limits {
			all[i].Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse(l)}
		}
		pod.Spec.InitContainers, pod.Spec.Containers = all[:2], all[2:]
		return pod
	}
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		sizeLimit *resource.Quantity
		want      string
	}{
		{name: "allocatable when nothing limits", pod: testPod(), want: "8Gi"},
		{name: "sizeLimit", pod: testPod(), sizeLimit: q("1Gi"), want: "1Gi"},
		{name: "sizeLimit above allocatable", pod: testPod(), sizeLimit: q("16Gi"), want: "8Gi"},
		{name: "pod limit: sidecar plus regular containers", pod: limited("100Mi", "50Mi", "200Mi", "300Mi"), want: "600Mi"},
		{name: "pod limit: an init container with the sidecars before it", pod: limited("100Mi", "1Gi", "200Mi", "300Mi"), want: "1124Mi"},
		{name: "sizeLimit below the pod limit", pod: limited("100Mi", "50Mi", "200Mi", "300Mi"), sizeLimit: q("10Mi"), want: "10Mi"},
		{name: "a container without a limit leaves the pod unlimited", pod: limited("100Mi", "50Mi", "200Mi"), want: "8Gi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := emptyDirMemorySize(tc.pod, tc.sizeLimit, allocatable), resource.MustParse(tc.want); got != want.Value() {
				t.Errorf("emptyDirMemorySize = %d, want %d (%s)", got, want.Value(), tc.want)
			}
		})
	}
}

func TestMountPropagation(t *testing.T) {
	for _, tc := range []struct {
		mode *v1.MountPropagationMode
		want runtimeapi.MountPropagation
	}{
		{nil, runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
		{ptr(v1.MountPropagationNone), runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
		{ptr(v1.MountPropagationHostToContainer), runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
		{ptr(v1.MountPropagationBidirectional), runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL},
	} {
		if got, err := mountPropagation(tc.mode); err != nil || got != tc.want {
			t.Errorf("mountPropagation(%v) = %v, %v; want %v", tc.mode, got, err, tc.want)
		}
	}
	if _, err := mountPropagation(ptr(v1.MountPropagationMode("Sideways"))); err == nil {
		t.Error("an invalid propagation mode was accepted")
	}
}

func TestTearDown(t *testing.T) {
	m := newTestManager(t)
	mounts := fakeMounts(m)
	dir := m.podDir("uid-1")
	inner := filepath.Join(dir, "volumes", "kubernetes.io~empty-dir", "shm")
	sub := filepath.Join(dir, "volume-subpaths", "v", "a", "0")
	for _, d := range []string{inner, sub} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Join(m.opts.RootDir, "pods", "uid-10", "x")
	mounts.points = []string{"/", inner, sub, other, dir + "-sibling"}

	if err := m.volumes.tearDown("uid-1"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/", other, dir + "-sibling"}, mounts.points); diff != "" {
		t.Errorf("mounts left (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod directory still there: %v", err)
	}

	// A mount that will not go keeps the directory.
	if err := os.MkdirAll(inner, 0o750); err != nil {
		t.Fatal(err)
	}
	m.volumes.unmount = func(string) error { return errors.New("device or resource busy") }
	mounts.points = append(mounts.points, inner)
	if err := m.volumes.tearDown("uid-1"); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("tearDown with a busy mount: %v, want the unmount error", err)
	}
	if _, err := os.Stat(inner); err != nil {
		t.Errorf("tearDown removed a directory with a mount on it: %v", err)
	}
}

func TestParseMountInfo(t *testing.T) {
	data := `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
23 22 0:21 / /var/lib/with\040space rw - tmpfs tmpfs rw
24 22 0:22 / /back\134slash rw - tmpfs tmpfs rw

`
	want := []string{"/", "/var/lib/with space", `/back\slash`}
	if diff := cmp.Diff(want, parseMountInfo(data)); diff != "" {
		t.Errorf("parseMountInfo (-want +got):\n%s", diff)
	}
}
