package podspec

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestValidateSecurityContexts(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(*v1.Pod)
		want   []string
	}{
		{"valid settings pass", func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To(int64(1000)), Sysctls: []v1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "1024 2048"}},
				SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/audit.json")}}
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: ptr.To(v1.DefaultProcMount), AllowPrivilegeEscalation: ptr.To(false)}
		}, nil},
		{"Unmasked procMount with host users", func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: ptr.To(v1.UnmaskedProcMount)}
		}, []string{"spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`"}},
		{"Unmasked procMount without host users", func(p *v1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: ptr.To(v1.UnmaskedProcMount)}
		}, nil},
		{"runAsUser out of range", func(p *v1.Pod) {
			p.Spec.InitContainers[0].SecurityContext = &v1.SecurityContext{RunAsUser: ptr.To(int64(-1))}
		}, []string{"spec.initContainers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive"}},
		{"Localhost seccomp without a profile", func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}}
		}, []string{"spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost"}},
		{"Localhost seccomp escaping the profile directory", func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("../x.json")}}
		}, []string{`spec.securityContext.seccompProfile.localhostProfile: Invalid value: "../x.json": must not contain '..'`}},
		{"no_new_privs beside privileged", func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false)}
		}, []string{"spec.containers[0].securityContext: Invalid value:"}},
		{"malformed and repeated sysctls", func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.shm_rmid_forced"}, {Name: "Kernel..x"}, {Name: "kernel.shm_rmid_forced"}}}
		}, []string{`spec.securityContext.sysctls[1].name: Invalid value: "Kernel..x": must have at most 253 characters`, `spec.securityContext.sysctls[2].name: Duplicate value: "kernel.shm_rmid_forced"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkValidate(t, tt.mutate, tt.want)
		})
	}
}
