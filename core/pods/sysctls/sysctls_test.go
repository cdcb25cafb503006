package sysctls

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func pod(mutate func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
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
	old, cur, unknown := Safe("4.4.0"), Safe("6.1.0-18-amd64"), Safe("")
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
	w, err := NewAllowlist(append(Safe("6.1"), "kernel.msg*", "net.core.somaxconn"))
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
			err := w.Check(tc.pod)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.msg {
				t.Errorf("error %v, want %q", err, tc.msg)
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
