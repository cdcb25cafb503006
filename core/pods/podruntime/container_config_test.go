package podruntime

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeDevices hands out fixed device options.
type fakeDevices struct {
	opts *ContainerOptions
	err  error
}

func (f fakeDevices) ContainerOptions(context.Context, *v1.Pod, *v1.Container) (*ContainerOptions, error) {
	return f.opts, f.err
}

func TestContainerConfig(t *testing.T) {
	m := newTestManager(t, func(o *Options) {
		o.ContainerOptions = fakeDevices{opts: &ContainerOptions{
			Envs:        map[string]string{"GPU": "0", "MODE": "device"},
			Mounts:      []*runtimeapi.Mount{{ContainerPath: "/dev/shm/gpu", HostPath: "/var/lib/gpu"}},
			Devices:     []*runtimeapi.Device{{ContainerPath: "/dev/gpu0", HostPath: "/dev/gpu0", Permissions: "rw"}},
			Annotations: map[string]string{"vendor.example/gpu": "0", annotationContainerRestartCount: "99"},
			CDIDevices:  []*runtimeapi.CDIDevice{{Name: "vendor.example/gpu=0"}},
		}}
	})
	hostDir := filepath.Join(t.TempDir(), "data")
	pod := testPod(func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{
			{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir, Type: ptr(v1.HostPathDirectoryOrCreate)}}},
		}
		c := &p.Spec.Containers[0]
		c.Command = []string{"/bin/sh", "-c", "echo $(GREETING) $(MISSING) $$(ESCAPED)"}
		c.Args = []string{"$(POD_NAME)"}
		c.WorkingDir = "/work"
		c.Stdin, c.TTY = true, true
		c.Env = []v1.EnvVar{
			{Name: "GREETING", Value: "hello"},
			{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			{Name: "MODE", Value: "mine"},
		}
		c.VolumeMounts = []v1.VolumeMount{
			{Name: "cache", MountPath: "/cache"},
			{Name: "data", MountPath: "/data", ReadOnly: true, MountPropagation: ptr(v1.MountPropagationHostToContainer)},
		}
		c.Ports = []v1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: v1.ProtocolTCP}}
		c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/quit", Port: intstr.FromString("http")}}}
		c.SecurityContext = &v1.SecurityContext{
			ReadOnlyRootFilesystem:   ptr(true),
			AllowPrivilegeEscalation: ptr(false),
			Capabilities:             &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}, Drop: []v1.Capability{"ALL"}},
		}
	})
	if err := m.makePodDirs(pod); err != nil {
		t.Fatal(err)
	}
	c := &pod.Spec.Containers[0]
	plan := &ResourcePlan{Containers: map[string]*runtimeapi.LinuxContainerResources{"a": {CpuShares: 256, MemoryLimitInBytes: 64 << 20}}}
	uid := int64(0)

	got, err := m.containerConfig(context.Background(), pod, containerInstance{
		spec: c, restartCount: 2, imageRef: "sha256:abc", user: imageUser{uid: &uid}, podIPs: []string{"10.88.0.5"}, plan: plan,
	})
	if err != nil {
		t.Fatal(err)
	}

	podDir := m.podDir(pod.UID)
	if got.Mounts[len(got.Mounts)-1].ContainerPath != v1.TerminationMessagePathDefault {
		t.Fatalf("last mount is %v, want the termination message file", got.Mounts[len(got.Mounts)-1])
	}
	tmFile := got.Mounts[len(got.Mounts)-1].HostPath
	if filepath.Dir(tmFile) != filepath.Join(podDir, "containers", "a") {
		t.Errorf("termination message file %s is not in the container's directory", tmFile)
	}
	if fi, err := os.Stat(tmFile); err != nil || fi.Mode().Perm() != 0o666 || fi.Size() != 0 {
		t.Errorf("termination message file: %v, %v; want an empty file with mode 0666", fi, err)
	}
	preStop, _ := json.Marshal(c.Lifecycle.PreStop)
	ports, _ := json.Marshal(c.Ports)

	want := &runtimeapi.ContainerConfig{
		Metadata:   &runtimeapi.ContainerMetadata{Name: "a", Attempt: 2},
		Image:      &runtimeapi.ImageSpec{Image: "sha256:abc", UserSpecifiedImage: "localhost/busybox:1"},
		Command:    []string{"/bin/sh", "-c", "echo hello $(MISSING) $(ESCAPED)"},
		Args:       []string{"web"},
		WorkingDir: "/work",
		Envs: []*runtimeapi.KeyValue{
			{Key: "GPU", Value: "0"}, {Key: "GREETING", Value: "hello"}, {Key: "POD_NAME", Value: "web"}, {Key: "MODE", Value: "mine"},
		},
		Labels: map[string]string{
			"io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": "uid-1",
			"io.kubernetes.container.name": "a",
		},
		Annotations: map[string]string{
			"vendor.example/gpu":                               "0",
			"io.kubernetes.container.hash":                     strconv.FormatUint(containerHash(c), 16),
			"io.kubernetes.container.restartCount":             "2",
			"io.kubernetes.container.terminationMessagePath":   "/dev/termination-log",
			"io.kubernetes.container.terminationMessagePolicy": "File",
			"io.kubernetes.pod.terminationGracePeriod":         "30",
			"io.kubernetes.container.preStopHandler":           string(preStop),
			"io.kubernetes.container.ports":                    string(ports),
		},
		Devices:    []*runtimeapi.Device{{ContainerPath: "/dev/gpu0", HostPath: "/dev/gpu0", Permissions: "rw"}},
		CDIDevices: []*runtimeapi.CDIDevice{{Name: "vendor.example/gpu=0"}},
		Mounts: []*runtimeapi.Mount{
			{ContainerPath: "/dev/shm/gpu", HostPath: "/var/lib/gpu"},
			{ContainerPath: "/cache", HostPath: filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "cache")},
			{ContainerPath: "/data", HostPath: hostDir, Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
			{ContainerPath: "/etc/hosts", HostPath: filepath.Join(podDir, "etc-hosts")},
			{ContainerPath: "/dev/termination-log", HostPath: tmFile},
		},
		LogPath: "a/2.log",
		Stdin:   true,
		Tty:     true,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{CpuShares: 256, MemoryLimitInBytes: 64 << 20},
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				Capabilities:   &runtimeapi.Capability{AddCapabilities: []string{"NET_ADMIN"}, DropCapabilities: []string{"ALL"}},
				ReadonlyRootfs: true,
				NoNewPrivs:     true,
				RunAsUser:      &runtimeapi.Int64Value{Value: 0},
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD,
					UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}},
				Seccomp:       &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
				MaskedPaths:   defaultMaskedPaths(),
				ReadonlyPaths: defaultReadonlyPaths,
			},
		},
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("containerConfig (-want +got):\n%s", diff)
	}

	// The volumes exist, with the modes containers need.
	if fi, err := os.Stat(filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "cache")); err != nil || fi.Mode().Perm() != 0o777 {
		t.Errorf("emptyDir: %v, %v; want a directory with mode 0777", fi, err)
	}
	if fi, err := os.Stat(hostDir); err != nil || !fi.IsDir() {
		t.Errorf("hostPath DirectoryOrCreate: %v, %v; want the directory created", fi, err)
	}
	hosts, err := os.ReadFile(filepath.Join(podDir, "etc-hosts"))
	if err != nil || !strings.Contains(string(hosts), "10.88.0.5\tweb\n") {
		t.Errorf("hosts file %q, %v; want the pod's address under its name", hosts, err)
	}
	if fi, err := os.Stat(filepath.Join(m.opts.PodLogsDir, "default_web_uid-1", "a")); err != nil || !fi.IsDir() {
		t.Errorf("container log directory: %v, %v", fi, err)
	}
}

func TestContainerConfigErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name    string
		change  func(*Options)
		pod     func(*v1.Pod)
		wantErr string
	}{
		{
			name: "hostPath Directory that does not exist",
			pod: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: missing, Type: ptr(v1.HostPathDirectory)}}}}
				p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "d", MountPath: "/d"}}
			},
			wantErr: "hostPath type check failed: " + missing + " is not a directory",
		},
		{
			name:    "mount of a volume the pod does not have",
			pod:     func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "nope", MountPath: "/d"}} },
			wantErr: `cannot find volume "nope" to mount into container "a"`,
		},
		{
			name: "a secret reference without an API server",
			pod: func(p *v1.Pod) {
				p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "PW", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
					LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "pw"}}}}
			},
			wantErr: "couldn't get secret default/creds, no kubeClient defined",
		},
		{
			name: "an unsupported downward API field",
			pod: func(p *v1.Pod) {
				p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: fieldRef("status.phase")}}
			},
			wantErr: "env X: unsupported fieldPath: status.phase",
		},
		{
			name:    "device allocation failure",
			change:  func(o *Options) { o.ContainerOptions = fakeDevices{err: errors.New("no GPU left")} },
			pod:     func(*v1.Pod) {},
			wantErr: "device allocation: no GPU left",
		},
		{
			name: "runAsNonRoot with an image running as root",
			pod: func(p *v1.Pod) {
				p.Spec.SecurityContext.RunAsNonRoot = ptr(true)
			},
			wantErr: "container has runAsNonRoot and image will run as root",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var changes []func(*Options)
			if tc.change != nil {
				changes = append(changes, tc.change)
			}
			m := newTestManager(t, changes...)
			pod := testPod(tc.pod)
			if err := m.makePodDirs(pod); err != nil {
				t.Fatal(err)
			}
			root := int64(0)
			_, err := m.containerConfig(context.Background(), pod, containerInstance{spec: &pod.Spec.Containers[0], imageRef: "sha256:abc", user: imageUser{uid: &root}})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("containerConfig error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestContainerConfigHostsFile(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pod       func(*v1.Pod)
		podIPs    []string
		wantHosts bool
	}{
		{name: "pod with an address", pod: func(*v1.Pod) {}, podIPs: []string{"10.88.0.5"}, wantHosts: true},
		{name: "pod without an address", pod: func(*v1.Pod) {}},
		{name: "host network", pod: withHostNetwork, podIPs: []string{"192.0.2.10"}, wantHosts: true},
		{name: "container mounting its own /etc/hosts", podIPs: []string{"10.88.0.5"}, pod: func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "h", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "h", MountPath: "/etc/hosts", SubPath: "hosts"}}
			p.Spec.Containers[0].TerminationMessagePath = ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestManager(t)
			fakeMounts(m)
			pod := testPod(tc.pod)
			if err := m.makePodDirs(pod); err != nil {
				t.Fatal(err)
			}
			mounts, err := m.containerMounts(pod, &pod.Spec.Containers[0], tc.podIPs, nil)
			if err != nil {
				t.Fatal(err)
			}
			hostsMounts := 0
			for _, mnt := range mounts {
				if mnt.HostPath == m.podEtcHostsPath(pod.UID) {
					hostsMounts++
				}
			}
			if got := hostsMounts == 1; got != tc.wantHosts {
				t.Errorf("managed hosts file mounted %d times, want mounted: %v (mounts %v)", hostsMounts, tc.wantHosts, mounts)
			}
		})
	}
}

// An ephemeral container with a target joins the target's process
// namespace, unless the pod shares one already.
func TestContainerConfigTargetNamespace(t *testing.T) {
	for _, tc := range []struct {
		name       string
		pod        func(*v1.Pod)
		target     string
		wantPid    runtimeapi.NamespaceMode
		wantTarget string
	}{
		{name: "no target", wantPid: runtimeapi.NamespaceMode_CONTAINER},
		{name: "a target", target: "c1", wantPid: runtimeapi.NamespaceMode_TARGET, wantTarget: "c1"},
		{name: "a target in a pod sharing its namespace", target: "c1", wantPid: runtimeapi.NamespaceMode_POD,
			pod: func(p *v1.Pod) { p.Spec.ShareProcessNamespace = ptr(true) }},
		{name: "a target on the host's namespace", target: "c1", wantPid: runtimeapi.NamespaceMode_NODE,
			pod: func(p *v1.Pod) { p.Spec.HostPID = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestManager(t)
			var changes []func(*v1.Pod)
			if tc.pod != nil {
				changes = append(changes, tc.pod)
			}
			pod := testPod(changes...)
			if err := m.makePodDirs(pod); err != nil {
				t.Fatal(err)
			}
			root := int64(0)
			got, err := m.containerConfig(context.Background(), pod, containerInstance{
				spec: &pod.Spec.Containers[0], imageRef: "sha256:abc", user: imageUser{uid: &root}, targetID: tc.target})
			if err != nil {
				t.Fatal(err)
			}
			ns := got.Linux.SecurityContext.NamespaceOptions
			if ns.Pid != tc.wantPid || ns.TargetId != tc.wantTarget {
				t.Errorf("PID namespace %v target %q, want %v target %q", ns.Pid, ns.TargetId, tc.wantPid, tc.wantTarget)
			}
		})
	}
}
