//go:build e2e

package clustere2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/microlet/microlet/internal/devnode"
)

// namedUserImage runs as a user known only by name, which runAsNonRoot
// cannot verify.
const namedUserImage = "localhost/busybox-named-user:1"

// denyMkdir is a Localhost seccomp profile: everything allowed but mkdir.
const denyMkdir = `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO"}]}`

// TestSecurityContext: each security context field of pods from the API,
// observed from inside their containers: `id` for runAsUser, runAsGroup,
// fsGroup and supplementalGroups; /proc/1/status for capabilities,
// privileged, no_new_privs and seccomp (RuntimeDefault, Unconfined, a
// Localhost profile under <root_dir>/seccomp); a write to a read-only root
// failing; the host's PID, IPC and network namespaces; the pause process in
// a shared PID namespace; sysctls, safe and allowed_unsafe_sysctls. The
// node refuses what it cannot honour with upstream's reasons: runAsNonRoot
// against an image running as root or as a named user, an unsafe sysctl
// (SysctlForbidden), `hostUsers: false` (containerd 1.6 has no user
// namespaces) and an AppArmor profile on a host without AppArmor.
func TestSecurityContext(t *testing.T) {
	t.Parallel()
	named := devnode.BusyboxImage(namedUserImage)
	named.User = "app"
	n := startNode(t, nodeOptions{
		Settings: map[string]string{"allowed_unsafe_sysctls": `["kernel.msgmax"]`},
		Images:   []devnode.Image{named},
	})
	waitReady(t, n, "")
	if err := os.MkdirAll(filepath.Join(n.RootDir, "seccomp"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(n.RootDir, "seccomp", "deny-mkdir.json"), denyMkdir)
	ns := testNamespace(t)
	pods := cluster(t).Admin.CoreV1().Pods(ns)
	create := func(name string, mutate func(*v1.PodSpec)) {
		spec := apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sleep", "100000"}})
		spec.SecurityContext = &v1.PodSecurityContext{}
		mutate(&spec)
		if _, err := pods.Create(context.Background(), &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	container := func(s *v1.PodSpec) *v1.SecurityContext {
		if s.Containers[0].SecurityContext == nil {
			s.Containers[0].SecurityContext = &v1.SecurityContext{}
		}
		return s.Containers[0].SecurityContext
	}
	create("ids", func(s *v1.PodSpec) {
		s.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000),
			FSGroup: ptr.To[int64](2000), SupplementalGroups: []int64{4000, 4001}, RunAsNonRoot: ptr.To(true)}
	})
	create("caps", func(s *v1.PodSpec) {
		sc := container(s)
		sc.Capabilities = &v1.Capabilities{Drop: []v1.Capability{"ALL"}, Add: []v1.Capability{"NET_ADMIN"}}
		sc.AllowPrivilegeEscalation = ptr.To(false)
		sc.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}
	})
	create("privileged", func(s *v1.PodSpec) { container(s).Privileged = ptr.To(true) })
	create("unconfined", func(s *v1.PodSpec) {
		s.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}
	})
	create("localhost", func(s *v1.PodSpec) {
		container(s).SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("deny-mkdir.json")}
	})
	create("readonly", func(s *v1.PodSpec) { container(s).ReadOnlyRootFilesystem = ptr.To(true) })
	create("hostns", func(s *v1.PodSpec) { s.HostPID, s.HostIPC, s.HostNetwork = true, true, true })
	create("shared", func(s *v1.PodSpec) {
		s.ShareProcessNamespace = ptr.To(true)
		s.Containers = append(s.Containers, v1.Container{Name: "peer", Image: devnode.DefaultTestImage, Command: []string{"sleep", "200000"}})
	})
	create("sysctls", func(s *v1.PodSpec) {
		s.SecurityContext.Sysctls = []v1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}, {Name: "kernel.msgmax", Value: "65536"}}
	})
	create("image-root", func(s *v1.PodSpec) { s.SecurityContext.RunAsNonRoot = ptr.To(true) })
	create("image-named", func(s *v1.PodSpec) {
		s.Containers[0].Image = namedUserImage
		s.SecurityContext.RunAsNonRoot = ptr.To(true)
	})
	create("unsafe-sysctl", func(s *v1.PodSpec) {
		s.SecurityContext.Sysctls = []v1.Sysctl{{Name: "kernel.sem", Value: "250 32000 32 128"}}
	})
	create("userns", func(s *v1.PodSpec) { s.HostUsers = ptr.To(false) })
	create("apparmor", func(s *v1.PodSpec) {
		container(s).AppArmorProfile = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
	})

	hostStatus := procStatus(t, "/proc/self/status")
	hostNS := func(kind string) string {
		link, err := os.Readlink("/proc/self/ns/" + kind)
		if err != nil {
			t.Fatal(err)
		}
		return link
	}
	running := func(t *testing.T, name string) types.UID {
		return waitAPIPod(t, n, ns, name, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning }).UID
	}
	rejected := func(t *testing.T, name, reason, message string) {
		p := waitAPIPod(t, n, ns, name, "Failed / "+reason, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
		if p.Status.Reason != reason || p.Status.Message != "Pod was rejected: "+message {
			t.Errorf("%s: reason %q message %q, want %s %q", name, p.Status.Reason, p.Status.Message, reason, "Pod was rejected: "+message)
		}
	}
	configError := func(t *testing.T, name, message string) {
		p := waitAPIPod(t, n, ns, name, "CreateContainerConfigError", func(p *v1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "CreateContainerConfigError"
		})
		if got := p.Status.ContainerStatuses[0].State.Waiting.Message; !strings.HasPrefix(got, message) {
			t.Errorf("%s: waiting message %q, want it to start with %q", name, got, message)
		}
	}
	cases := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"ids", func(t *testing.T) {
			uid := running(t, "ids")
			out := execIn(t, n, uid, "id")
			want := regexp.MustCompile(`^uid=1000 gid=3000 groups=(\d+,?)+$`)
			groups := strings.Split(strings.TrimPrefix(want.FindString(strings.TrimSpace(out)), "uid=1000 gid=3000 groups="), ",")
			slices.Sort(groups)
			if !want.MatchString(strings.TrimSpace(out)) || !slices.Equal(groups, []string{"2000", "3000", "4000", "4001"}) {
				t.Errorf("id: %q, want uid 1000, gid 3000, groups 3000 (runAsGroup), 2000 (fsGroup), 4000 and 4001", out)
			}
		}},
		{"caps", func(t *testing.T) {
			st := procStatus(t, execIn(t, n, running(t, "caps"), "cat", "/proc/1/status"))
			for key, want := range map[string]string{"CapEff": "0000000000001000", "CapBnd": "0000000000001000", "CapPrm": "0000000000001000", "NoNewPrivs": "1", "Seccomp": "2"} {
				if st[key] != want {
					t.Errorf("%s: %q, want %q (only NET_ADMIN, no_new_privs, RuntimeDefault's filter)", key, st[key], want)
				}
			}
		}},
		{"privileged", func(t *testing.T) {
			st := procStatus(t, execIn(t, n, running(t, "privileged"), "cat", "/proc/1/status"))
			if st["CapEff"] != hostStatus["CapBnd"] || st["NoNewPrivs"] != "0" {
				t.Errorf("CapEff %s NoNewPrivs %s, want every capability of the host's bounding set (%s) and privileges allowed", st["CapEff"], st["NoNewPrivs"], hostStatus["CapBnd"])
			}
			if out := execIn(t, n, running(t, "privileged"), "ls", "/dev"); !strings.Contains(out, "kmsg") {
				t.Errorf("/dev of a privileged container: %q, want the host's devices", out)
			}
		}},
		{"unconfined", func(t *testing.T) {
			st := procStatus(t, execIn(t, n, running(t, "unconfined"), "cat", "/proc/1/status"))
			if st["Seccomp"] != "0" || st["NoNewPrivs"] != "0" {
				t.Errorf("Seccomp %s NoNewPrivs %s, want 0 and 0", st["Seccomp"], st["NoNewPrivs"])
			}
		}},
		{"localhost", func(t *testing.T) {
			uid := running(t, "localhost")
			if st := procStatus(t, execIn(t, n, uid, "cat", "/proc/1/status")); st["Seccomp"] != "2" {
				t.Errorf("Seccomp %s, want 2 (a filter)", st["Seccomp"])
			}
			code, _, stderr := execResult(t, n, uid, "app", "mkdir", "/tmp/denied")
			if code == 0 || !strings.Contains(stderr, "Operation not permitted") {
				t.Errorf("mkdir under deny-mkdir.json: exit %d, %q; want it refused by the profile", code, stderr)
			}
		}},
		{"readonly", func(t *testing.T) {
			uid := running(t, "readonly")
			code, _, stderr := execResult(t, n, uid, "app", "touch", "/written")
			if code == 0 || !strings.Contains(stderr, "Read-only file system") {
				t.Errorf("touch /written: exit %d, %q; want Read-only file system", code, stderr)
			}
		}},
		{"hostns", func(t *testing.T) {
			uid := running(t, "hostns")
			for _, kind := range []string{"pid", "ipc", "net"} {
				if got := strings.TrimSpace(execIn(t, n, uid, "readlink", "/proc/self/ns/"+kind)); got != hostNS(kind) {
					t.Errorf("%s namespace %s, want the host's %s", kind, got, hostNS(kind))
				}
			}
			// With the host's PID namespace the test's own process is visible.
			if got := execIn(t, n, uid, "cat", fmt.Sprintf("/proc/%d/cmdline", os.Getpid())); !strings.Contains(got, ".test") {
				t.Errorf("the test process's command line from inside: %q", got)
			}
			// The other pods have namespaces of their own.
			other := running(t, "ids")
			for _, kind := range []string{"pid", "ipc", "net"} {
				if got := strings.TrimSpace(execIn(t, n, other, "readlink", "/proc/self/ns/"+kind)); got == hostNS(kind) {
					t.Errorf("pod ids shares the host's %s namespace", kind)
				}
			}
		}},
		{"shared", func(t *testing.T) {
			uid := running(t, "shared")
			if got := execIn(t, n, uid, "cat", "/proc/1/cmdline"); !strings.HasPrefix(got, "/pause") {
				t.Errorf("PID 1 of a shared process namespace: %q, want the pause process", got)
			}
			if got := execIn(t, n, uid, "ps", "-o", "args"); !strings.Contains(got, "sleep 200000") {
				t.Errorf("ps in app: %q, want the peer container's sleep", got)
			}
		}},
		{"sysctls", func(t *testing.T) {
			uid := running(t, "sysctls")
			for path, want := range map[string]string{"/proc/sys/kernel/shm_rmid_forced": "1", "/proc/sys/kernel/msgmax": "65536"} {
				if got := strings.TrimSpace(execIn(t, n, uid, "cat", path)); got != want {
					t.Errorf("%s: %q, want %q", path, got, want)
				}
			}
		}},
		{"image-root", func(t *testing.T) {
			configError(t, "image-root", "container has runAsNonRoot and image will run as root (pod: \"image-root_"+ns+"(")
		}},
		{"image-named", func(t *testing.T) {
			configError(t, "image-named", "container has runAsNonRoot and image has non-numeric user (app), cannot verify user is non-root (pod: \"image-named_"+ns+"(")
		}},
		{"unsafe-sysctl", func(t *testing.T) {
			rejected(t, "unsafe-sysctl", "SysctlForbidden", `forbidden sysctl: "kernel.sem" not allowlisted`)
		}},
		{"userns", func(t *testing.T) {
			rejected(t, "userns", "UserNamespacesNotSupported", "can't set `spec.hostUsers: false`, runtime does not support user namespaces")
		}},
		{"apparmor", func(t *testing.T) {
			if _, err := os.Stat("/sys/kernel/security/apparmor"); err == nil {
				running(t, "apparmor") // a host with AppArmor runs it under the runtime's profile
				return
			}
			rejected(t, "apparmor", "AppArmor", "Cannot enforce AppArmor: AppArmor is not enabled on the host")
		}},
	}
	t.Run("group", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				tc.check(t)
			})
		}
	})
}

// procStatus parses /proc/<pid>/status text (or, given a path, the file)
// into its keys and values.
func procStatus(t *testing.T, textOrPath string) map[string]string {
	t.Helper()
	text := textOrPath
	if strings.HasPrefix(textOrPath, "/proc/") {
		b, err := os.ReadFile(textOrPath)
		if err != nil {
			t.Fatal(err)
		}
		text = string(b)
	}
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}
