package podruntime

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerSecurityContext(t *testing.T) {
	m := newTestManager(t)
	root, nobody := int64(0), int64(65534)
	for _, tc := range []struct {
		name    string
		pod     func(*v1.Pod)
		user    imageUser
		check   func(*testing.T, *runtimeapi.LinuxContainerSecurityContext)
		wantErr string
	}{
		{name: "pod settings apply, the container's win", pod: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(1000)), FSGroup: ptr(int64(2000)),
				SELinuxOptions: &v1.SELinuxOptions{Level: "s0:c1"}}
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsUser: ptr(int64(1001)), Privileged: ptr(true)}
		}, user: imageUser{uid: &root}, check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.RunAsUser.GetValue() != 1001 || sc.RunAsGroup.GetValue() != 1000 || !sc.Privileged ||
				sc.SelinuxOptions.GetLevel() != "s0:c1" || !cmp.Equal(sc.SupplementalGroups, []int64{2000}) {
				t.Errorf("security context %v", sc)
			}
		}},
		{name: "the image's user when the spec names none", pod: func(*v1.Pod) {}, user: imageUser{username: "www-data"},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.RunAsUser != nil || sc.RunAsUsername != "www-data" {
					t.Errorf("user %v / %q, want the image's user name", sc.RunAsUser, sc.RunAsUsername)
				}
			}},
		{name: "unmasked proc", pod: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: ptr(v1.UnmaskedProcMount)}
		}, user: imageUser{uid: &root}, check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.MaskedPaths == nil || len(sc.MaskedPaths) != 0 || len(sc.ReadonlyPaths) != 0 {
				t.Errorf("masked %v, read-only %v; want explicitly none", sc.MaskedPaths, sc.ReadonlyPaths)
			}
		}},
		{name: "allowPrivilegeEscalation true keeps privileges", pod: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AllowPrivilegeEscalation: ptr(true)}
		}, user: imageUser{uid: &root}, check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.NoNewPrivs {
				t.Error("no_new_privs set although escalation is allowed")
			}
		}},
		{name: "seccomp Localhost under the root directory", pod: func(p *v1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("audit.json")}
		}, user: imageUser{uid: &root}, check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			want := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: filepath.Join(m.opts.RootDir, "seccomp", "audit.json")}
			if diff := cmp.Diff(want, sc.Seccomp, protocmp.Transform()); diff != "" {
				t.Errorf("seccomp (-want +got):\n%s", diff)
			}
		}},
		{name: "container seccomp wins", pod: func(p *v1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}
		}, user: imageUser{uid: &root}, check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.Seccomp.GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault {
				t.Errorf("seccomp %v, want RuntimeDefault", sc.Seccomp)
			}
		}},
		{name: "Localhost seccomp without a profile", pod: func(p *v1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}
		}, user: imageUser{uid: &root}, wantErr: "localhostProfile must be set"},
		{name: "runAsNonRoot with runAsUser 0", pod: func(p *v1.Pod) {
			p.Spec.SecurityContext.RunAsNonRoot = ptr(true)
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsUser: &root}
		}, user: imageUser{uid: &nobody}, wantErr: "container's runAsUser breaks non-root policy"},
		{name: "runAsNonRoot with a named image user", pod: func(p *v1.Pod) { p.Spec.SecurityContext.RunAsNonRoot = ptr(true) },
			user: imageUser{username: "app"}, wantErr: "image has non-numeric user (app)"},
		{name: "runAsNonRoot with an image user out of range", pod: func(p *v1.Pod) { p.Spec.SecurityContext.RunAsNonRoot = ptr(true) },
			user: imageUser{uid: ptr(int64(1) << 40)}, wantErr: "image has an invalid user id (1099511627776). (Must be 1-(2147483647))"},
		{name: "AppArmor in the field and the deprecated string", pod: func(p *v1.Pod) {
			p.Spec.SecurityContext.AppArmorProfile = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr("k8s-deny")}
		}, user: imageUser{uid: &root}, check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			want := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "k8s-deny"}
			if diff := cmp.Diff(want, sc.Apparmor, protocmp.Transform()); diff != "" || sc.ApparmorProfile != "localhost/k8s-deny" {
				t.Errorf("apparmor %q (-want +got):\n%s", sc.ApparmorProfile, diff)
			}
		}},
		{name: "AppArmor from the container's annotation", pod: func(p *v1.Pod) {
			p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + p.Spec.Containers[0].Name: "runtime/default"}
			p.Spec.SecurityContext.AppArmorProfile = &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
		}, user: imageUser{uid: &root}, check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.Apparmor.GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault || sc.ApparmorProfile != "runtime/default" {
				t.Errorf("apparmor %v %q, want the annotation's RuntimeDefault", sc.Apparmor, sc.ApparmorProfile)
			}
		}},
		{name: "supplementalGroupsPolicy", pod: func(p *v1.Pod) {
			p.Spec.SecurityContext.SupplementalGroupsPolicy = ptr(v1.SupplementalGroupsPolicyStrict)
			p.Spec.SecurityContext.SupplementalGroups = []int64{3000, 3001}
		}, user: imageUser{uid: &root}, check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
			if sc.SupplementalGroupsPolicy != runtimeapi.SupplementalGroupsPolicy_Strict || !cmp.Equal(sc.SupplementalGroups, []int64{3000, 3001}) {
				t.Errorf("groups %v policy %v", sc.SupplementalGroups, sc.SupplementalGroupsPolicy)
			}
		}},
		{name: "runAsNonRoot satisfied by the image", pod: func(p *v1.Pod) { p.Spec.SecurityContext.RunAsNonRoot = ptr(true) },
			user: imageUser{uid: &nobody}, check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.RunAsUser.GetValue() != nobody {
					t.Errorf("user %v", sc.RunAsUser)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(tc.pod)
			sc, err := m.containerSecurityContext(pod, &pod.Spec.Containers[0], tc.user)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, sc)
		})
	}
}

func TestSeccompDefault(t *testing.T) {
	m := newTestManager(t)
	root := int64(0)
	for _, tc := range []struct {
		seccompDefault bool
		profile        *v1.SeccompProfile
		want           runtimeapi.SecurityProfile_ProfileType
	}{
		{false, nil, runtimeapi.SecurityProfile_Unconfined},
		{true, nil, runtimeapi.SecurityProfile_RuntimeDefault},
		{true, &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}, runtimeapi.SecurityProfile_Unconfined},
	} {
		m.opts.SeccompDefault = tc.seccompDefault
		pod := testPod(func(p *v1.Pod) { p.Spec.SecurityContext.SeccompProfile = tc.profile })
		sc, err := m.containerSecurityContext(pod, &pod.Spec.Containers[0], imageUser{uid: &root})
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.Seccomp.GetProfileType(); got != tc.want {
			t.Errorf("seccomp_default %t, profile %v: %v, want %v", tc.seccompDefault, tc.profile, got, tc.want)
		}
	}
}
