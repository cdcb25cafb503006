package secadmit

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

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

func TestSafeSysctlsFollowTheKernel(t *testing.T) {
	old, cur, unknown := SafeSysctls("4.4.0"), SafeSysctls("6.1.0-18-amd64"), SafeSysctls("")
	if len(cur) != len(safeSysctls) {
		t.Errorf("6.1 has %d safe sysctls, want all %d", len(cur), len(safeSysctls))
	}
	if slices.Contains(old, "net.ipv4.tcp_keepalive_time") || !slices.Contains(old, "net.ipv4.ip_local_reserved_ports") {
		t.Errorf("4.4 safe sysctls %v: tcp_keepalive_time is namespaced from 4.5, ip_local_reserved_ports from 3.16", old)
	}
	if len(unknown) != 5 {
		t.Errorf("unknown kernel: %v, want the five every kernel namespaces", unknown)
	}
}

func TestAllowlist(t *testing.T) {
	w, err := NewAllowlist(append(SafeSysctls("6.1"), "kernel.msg*", "net.core.somaxconn"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, msg string
		pod       *v1.Pod
	}{
		{name: "no sysctls", pod: pod(func(*v1.Pod) {})},
		{name: "safe", pod: pod(withSysctls("kernel.shm_rmid_forced", "net/ipv4/tcp_syncookies"))},
		{name: "allowed unsafe by prefix and name", pod: pod(withSysctls("kernel.msgmax", "net.core.somaxconn"))},
		{name: "unsafe", pod: pod(withSysctls("kernel.shm_rmid_forced", "kernel.sem")), msg: `forbidden sysctl: "kernel.sem" not allowlisted`},
		{name: "slashes are normalised", pod: pod(withSysctls("net/ipv4/conf/eth0/forwarding")), msg: `forbidden sysctl: "net.ipv4.conf.eth0.forwarding" not allowlisted`},
		{name: "net sysctl with host network", pod: pod(func(p *v1.Pod) { withSysctls("net.core.somaxconn")(p); p.Spec.HostNetwork = true }),
			msg: `forbidden sysctl: "net.core.somaxconn" not allowed with host Net enabled`},
		{name: "ipc sysctl with host IPC", pod: pod(func(p *v1.Pod) { withSysctls("kernel.msgmax")(p); p.Spec.HostIPC = true }),
			msg: `forbidden sysctl: "kernel.msgmax" not allowed with host IPC enabled`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := w.Check(tc.pod)
			if tc.msg == "" {
				if v.Reason != "" {
					t.Fatalf("refused: %v", v)
				}
				return
			}
			if v.Reason != ReasonSysctlForbidden || v.Message != tc.msg {
				t.Errorf("verdict %+v, want %s %q", v, ReasonSysctlForbidden, tc.msg)
			}
		})
	}
}

func TestNewAllowlistRefusesBadPatterns(t *testing.T) {
	for _, p := range []string{"Kernel.X", "kernel.*.x", "vm.swappiness", "fs.*"} {
		if _, err := NewAllowlist([]string{p}); err == nil {
			t.Errorf("%q accepted", p)
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
	w, err := NewAllowlist(SafeSysctls("6.1"))
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
