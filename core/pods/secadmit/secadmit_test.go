package secadmit

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/microlet/microlet/core/pods/sysctls"
	"github.com/microlet/microlet/core/runtime/cri"
)

func pod(mutate func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	p.Name, p.Namespace = "p", "default"
	mutate(p)
	return p
}

func withSysctls(names ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.SecurityContext = &v1.PodSecurityContext{}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
		}
	}
}

func TestAppArmor(t *testing.T) {
	profile := func(t v1.AppArmorProfileType, name *string) *v1.AppArmorProfile {
		return &v1.AppArmorProfile{Type: t, LocalhostProfile: name}
	}
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		enabled bool
		msg     string
	}{
		{name: "none on a host without AppArmor", pod: pod(func(*v1.Pod) {})},
		{name: "Unconfined on a host without AppArmor", pod: pod(func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: profile(v1.AppArmorProfileTypeUnconfined, nil)}
		})},
		{name: "RuntimeDefault on a host without AppArmor", pod: pod(func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: profile(v1.AppArmorProfileTypeRuntimeDefault, nil)}
		}), msg: "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
		{name: "annotation on a host without AppArmor", pod: pod(func(p *v1.Pod) {
			p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "app": "localhost/k8s-deny"}
		}), msg: "Cannot enforce AppArmor: AppArmor is not enabled on the host"},
		{name: "RuntimeDefault with AppArmor", enabled: true, pod: pod(func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: profile(v1.AppArmorProfileTypeRuntimeDefault, nil)}
		})},
		{name: "empty Localhost name", enabled: true, pod: pod(func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: profile(v1.AppArmorProfileTypeLocalhost, ptr.To(" "))}
		}), msg: `Cannot enforce AppArmor: invalid empty AppArmor profile name: "&AppArmorProfile{Type:Localhost,LocalhostProfile:* ,}"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := CheckAppArmor(tc.pod, tc.enabled)
			if tc.msg == "" && v.Reason != "" || tc.msg != "" && (v.Reason != ReasonAppArmor || v.Message != tc.msg) {
				t.Errorf("verdict %+v, want message %q", v, tc.msg)
			}
		})
	}
}

type fakeRuntime struct{ health cri.RuntimeHealth }

func (f fakeRuntime) Health() (cri.RuntimeHealth, <-chan struct{}) { return f.health, nil }

func TestAdmitterRuntimeFeatures(t *testing.T) {
	w, err := sysctls.NewAllowlist(sysctls.Safe("6.1"))
	if err != nil {
		t.Fatal(err)
	}
	old := cri.RuntimeHealth{CheckedAt: time.Now()} // containerd 1.6: no handlers, no features
	userns := cri.RuntimeHealth{CheckedAt: time.Now(), Handlers: []*runtimeapi.RuntimeHandler{{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}}},
		Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true}}
	noUsers := pod(func(p *v1.Pod) { p.Spec.HostUsers = ptr.To(false) })
	strict := pod(func(p *v1.Pod) {
		p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: ptr.To(v1.SupplementalGroupsPolicyStrict)}
	})
	for _, tc := range []struct {
		name           string
		pod            *v1.Pod
		health         cri.RuntimeHealth
		admit, retry   bool
		reason, prefix string
	}{
		{name: "hostUsers true needs nothing", pod: pod(func(p *v1.Pod) { p.Spec.HostUsers = ptr.To(true) }), admit: true},
		{name: "hostUsers false before the runtime's status", pod: noUsers, retry: true},
		{name: "hostUsers false while the runtime is down", pod: noUsers, health: cri.RuntimeHealth{CheckedAt: time.Now(), Err: errors.New("down")}, retry: true},
		{name: "hostUsers false on a runtime without user namespaces", pod: noUsers, health: old,
			reason: ReasonUserNamespacesNotSupported, prefix: "can't set `spec.hostUsers: false`, runtime does not support user namespaces"},
		{name: "hostUsers false on a runtime with user namespaces", pod: noUsers, health: userns,
			reason: ReasonUserNamespacesNotSupported, prefix: "can't set `spec.hostUsers: false`, this node does not allocate"},
		{name: "Strict on an old runtime", pod: strict, health: old,
			reason: ReasonSupplementalGroupsPolicy, prefix: "SupplementalGroupsPolicy=Strict is not supported in this node"},
		{name: "Strict on a runtime that has it", pod: strict, health: userns, admit: true},
		{name: "Merge needs nothing", pod: pod(func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: ptr.To(v1.SupplementalGroupsPolicyMerge)}
		}), admit: true},
		{name: "a sysctl is checked first", pod: pod(func(p *v1.Pod) { withSysctls("kernel.sem")(p); p.Spec.HostUsers = ptr.To(false) }),
			reason: ReasonSysctlForbidden, prefix: "forbidden sysctl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Admitter{Sysctls: w, Runtime: fakeRuntime{tc.health}}
			got := a.Admit(context.Background(), tc.pod, nil)
			if got.Admit != tc.admit || got.Retry != tc.retry || !tc.admit && !tc.retry && (got.Reason != tc.reason || len(got.Message) < len(tc.prefix) || got.Message[:len(tc.prefix)] != tc.prefix) {
				t.Errorf("admission %+v, want admit %t retry %t reason %s message %q...", got, tc.admit, tc.retry, tc.reason, tc.prefix)
			}
		})
	}
}
