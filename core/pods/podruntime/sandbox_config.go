package podruntime

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sandboxConfig is the RunPodSandbox configuration of a pod, as upstream's
// generatePodSandboxConfig: identity, hostname, DNS, log directory, host
// ports, namespaces, sysctls, security context and the cgroup parent and
// pod-level resources of the resource plan (nil plan: none).
func (m *Manager) sandboxConfig(pod *v1.Pod, attempt uint32, plan *ResourcePlan) (*runtimeapi.PodSandboxConfig, error) {
	config := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   attempt,
		},
		Labels:       newPodLabels(pod),
		Annotations:  pod.Annotations,
		LogDirectory: m.podLogsDir(pod.Namespace, pod.Name, pod.UID),
		PortMappings: portMappings(pod),
	}
	dns, err := m.dns.podDNS(pod)
	if err != nil {
		return nil, err
	}
	config.DnsConfig = dns
	if !pod.Spec.HostNetwork {
		hostname, domain, err := podHostnameAndDomain(pod, m.opts.DNS.ClusterDomain)
		if err != nil {
			return nil, err
		}
		if config.Hostname, err = kernelHostname(hostname, domain, pod.Spec.SetHostnameAsFQDN); err != nil {
			return nil, err
		}
	}
	seccomp, err := m.seccompProfile(nil, true)
	if err != nil {
		return nil, err
	}
	linux := &runtimeapi.LinuxPodSandboxConfig{
		SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions:   namespaceOptions(pod),
			Privileged:         hasPrivilegedContainer(pod),
			Seccomp:            seccomp,
			SupplementalGroups: supplementalGroups(pod),
		},
		Sysctls: map[string]string{},
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		for _, s := range psc.Sysctls {
			linux.Sysctls[utilsysctl.NormalizeName(s.Name)] = s.Value
		}
		if psc.RunAsUser != nil {
			linux.SecurityContext.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			linux.SecurityContext.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
		}
		linux.SecurityContext.SelinuxOptions = runtimeSELinuxOptions(psc.SELinuxOptions)
	}
	if linux.SecurityContext.SupplementalGroupsPolicy, err = supplementalGroupsPolicy(pod); err != nil {
		return nil, err
	}
	if plan != nil {
		linux.CgroupParent = plan.CgroupParent
		linux.Resources = plan.Sandbox
	}
	config.Linux = linux
	return config, nil
}

// portMappings are the pod's container ports, as upstream passes them:
// every one, the runtime skipping those without a host port, so that the
// sandbox's config (crictl inspectp) reads as a kubelet's.
func portMappings(pod *v1.Pod) []*runtimeapi.PortMapping {
	var mappings []*runtimeapi.PortMapping
	for _, c := range pod.Spec.Containers {
		seen := map[string]bool{}
		for _, p := range c.Ports {
			// Upstream skips a port whose name (or, unnamed, whose
			// definition) repeats within a container.
			name := p.Name
			if name == "" {
				name = fmt.Sprintf("%s-%s:%d:%d", p.Protocol, p.HostIP, p.ContainerPort, p.HostPort)
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			mappings = append(mappings, &runtimeapi.PortMapping{
				Protocol:      runtimeProtocol(p.Protocol),
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	return mappings
}

func runtimeProtocol(p v1.Protocol) runtimeapi.Protocol {
	switch p {
	case v1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case v1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}
