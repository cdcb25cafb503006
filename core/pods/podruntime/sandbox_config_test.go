package podruntime

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	v1 "k8s.io/api/core/v1"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestSandboxConfig(t *testing.T) {
	m := newTestManager(t)
	pod := testPod(func(p *v1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
		p.Spec.Hostname = "front"
		p.Spec.Subdomain = "svc1"
		p.Spec.Containers[0].Ports = []v1.ContainerPort{
			{Name: "http", ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP},
			{Name: "metrics", ContainerPort: 9090, Protocol: v1.ProtocolTCP},
			{ContainerPort: 53, HostPort: 5353, Protocol: v1.ProtocolUDP, HostIP: "127.0.0.1"},
		}
		p.Spec.SecurityContext = &v1.PodSecurityContext{
			RunAsUser:          ptr(int64(1000)),
			RunAsGroup:         ptr(int64(2000)),
			FSGroup:            ptr(int64(3000)),
			SupplementalGroups: []int64{4000},
			Sysctls:            []v1.Sysctl{{Name: "net/ipv4/ip_unprivileged_port_start", Value: "0"}, {Name: "kernel.shm_rmid_forced", Value: "1"}},
		}
		p.Spec.HostIPC = true
		p.Spec.ShareProcessNamespace = ptr(true)
		p.Spec.Containers[1].SecurityContext = &v1.SecurityContext{Privileged: ptr(true)}
	})
	plan := &ResourcePlan{CgroupParent: "/kubepods/burstable/poduid-1", Sandbox: &runtimeapi.LinuxContainerResources{CpuShares: 512}}

	got, err := m.sandboxConfig(pod, 3, plan)
	if err != nil {
		t.Fatal(err)
	}
	want := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1", Attempt: 3},
		Hostname: "front",
		Labels: map[string]string{
			"app": "web", "io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": "uid-1",
		},
		Annotations:  map[string]string{"kubernetes.io/config.source": "file"},
		LogDirectory: filepath.Join(m.opts.PodLogsDir, "default_web_uid-1"),
		DnsConfig: &runtimeapi.DNSConfig{
			Servers:  []string{"10.96.0.10"},
			Searches: []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"},
			Options:  []string{"ndots:5"},
		},
		PortMappings: []*runtimeapi.PortMapping{
			{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 8080},
			{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 9090},
			{Protocol: runtimeapi.Protocol_UDP, ContainerPort: 53, HostPort: 5353, HostIp: "127.0.0.1"},
		},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: "/kubepods/burstable/poduid-1",
			Resources:    &runtimeapi.LinuxContainerResources{CpuShares: 512},
			Sysctls:      map[string]string{"net.ipv4.ip_unprivileged_port_start": "0", "kernel.shm_rmid_forced": "1"},
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{
					Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_POD, Ipc: runtimeapi.NamespaceMode_NODE,
					UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE},
				},
				RunAsUser:          &runtimeapi.Int64Value{Value: 1000},
				RunAsGroup:         &runtimeapi.Int64Value{Value: 2000},
				SupplementalGroups: []int64{3000, 4000},
				Privileged:         true,
				Seccomp:            &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			},
		},
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("sandboxConfig (-want +got):\n%s", diff)
	}
}

func TestSandboxConfigHostNamespaces(t *testing.T) {
	m := newTestManager(t)
	pod := testPod(withHostNetwork, func(p *v1.Pod) { p.Spec.HostPID = true })
	got, err := m.sandboxConfig(pod, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Hostname != "" {
		t.Errorf("a hostNetwork sandbox got hostname %q; it must keep the node's", got.Hostname)
	}
	wantNS := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_POD,
		UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}}
	if diff := cmp.Diff(wantNS, got.Linux.SecurityContext.NamespaceOptions, protocmp.Transform()); diff != "" {
		t.Errorf("namespace options (-want +got):\n%s", diff)
	}
	if got.Linux.CgroupParent != "" || got.Linux.Resources != nil {
		t.Errorf("without a resource plan the sandbox got cgroup parent %q and resources %v", got.Linux.CgroupParent, got.Linux.Resources)
	}
	// ClusterFirst on the host network is Default: the node's resolver
	// (none configured here, so loopback).
	if diff := cmp.Diff([]string{"127.0.0.1"}, got.DnsConfig.Servers); diff != "" {
		t.Errorf("DNS servers (-want +got):\n%s", diff)
	}
}

func TestSandboxHostname(t *testing.T) {
	long := "a234567890123456789012345678901234567890123456789012345678901234567890"
	for _, tc := range []struct {
		name       string
		pod        func(*v1.Pod)
		want       string
		wantDomain string
		wantErr    bool
	}{
		{name: "pod name", pod: func(*v1.Pod) {}, want: "web"},
		{name: "spec.hostname", pod: func(p *v1.Pod) { p.Spec.Hostname = "front" }, want: "front"},
		{name: "subdomain", pod: func(p *v1.Pod) { p.Spec.Subdomain = "sub" }, want: "web", wantDomain: "sub.default.svc.cluster.local"},
		{name: "FQDN", pod: func(p *v1.Pod) { p.Spec.Subdomain = "sub"; p.Spec.SetHostnameAsFQDN = ptr(true) },
			want: "web.sub.default.svc.cluster.local", wantDomain: "sub.default.svc.cluster.local"},
		{name: "FQDN without subdomain is the hostname", pod: func(p *v1.Pod) { p.Spec.SetHostnameAsFQDN = ptr(true) }, want: "web"},
		{name: "long name cut to 63 without a trailing dash", pod: func(p *v1.Pod) { p.Name = long[:62] + "-x" }, want: long[:62]},
		{name: "invalid hostname", pod: func(p *v1.Pod) { p.Spec.Hostname = "Not_A_Label" }, wantErr: true},
		{name: "invalid subdomain", pod: func(p *v1.Pod) { p.Spec.Subdomain = "a.b" }, wantErr: true},
		{name: "FQDN too long", pod: func(p *v1.Pod) {
			p.Spec.Hostname = long[:60]
			p.Spec.Subdomain = "sub"
			p.Spec.SetHostnameAsFQDN = ptr(true)
		}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(tc.pod)
			hostname, domain, err := podHostnameAndDomain(pod, "cluster.local")
			if err == nil {
				hostname, err = kernelHostname(hostname, domain, pod.Spec.SetHostnameAsFQDN)
			}
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got hostname %q, want an error", hostname)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if hostname != tc.want || domain != tc.wantDomain {
				t.Errorf("hostname, domain = %q, %q; want %q, %q", hostname, domain, tc.want, tc.wantDomain)
			}
		})
	}
}

// TestSysctlDotsName: sysctls reach runc with dots as separators, as
// upstream's ConvertPodSysctlsVariableToDotsSeparator (NormalizeName).
func TestSysctlDotsName(t *testing.T) {
	for in, want := range map[string]string{
		"kernel.shm_rmid_forced":           "kernel.shm_rmid_forced",
		"net/ipv4/ip_forward":              "net.ipv4.ip_forward",
		"net/ipv4/conf/eno2.100/rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"net.ipv4.conf.eno2/100.rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
	} {
		if got := utilsysctl.NormalizeName(in); got != want {
			t.Errorf("NormalizeName(%q) = %q, want %q", in, got, want)
		}
	}
}
