package podruntime

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	// etcHostsPath is where containers see the kubelet-managed hosts file.
	etcHostsPath = "/etc/hosts"
	// nodeHostsPath is the node's own hosts file, which hostNetwork pods see.
	nodeHostsPath = "/etc/hosts"

	managedHostsHeader                = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderWithHostNetwork = "# Kubernetes-managed hosts file (host network).\n"

	// hostnameMaxLen is the longest hostname the kernel takes.
	hostnameMaxLen = 63
)

// podHostnameAndDomain is upstream's GeneratePodHostNameAndDomain: the
// pod's hostname (spec.hostname, else its name, cut to 63 characters) and
// domain (<subdomain>.<namespace>.svc.<clusterDomain> when it has a
// subdomain).
func podHostnameAndDomain(pod *v1.Pod, clusterDomain string) (string, string, error) {
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Hostname); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Hostname %q is not a valid DNS label: %s", pod.Spec.Hostname, strings.Join(msgs, ";"))
		}
		hostname = pod.Spec.Hostname
	}
	if len(hostname) > hostnameMaxLen {
		// A hostname must not end with '-' or '.'.
		hostname = strings.TrimRight(hostname[:hostnameMaxLen], "-.")
		if hostname == "" {
			return "", "", fmt.Errorf("hostname for pod %q was invalid: it is empty once cut to %d characters", pod.Name, hostnameMaxLen)
		}
	}
	domain := ""
	if pod.Spec.Subdomain != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Subdomain); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Subdomain %q is not a valid DNS label: %s", pod.Spec.Subdomain, strings.Join(msgs, ";"))
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, domain, nil
}

// kernelHostname is the hostname the sandbox gets: the FQDN when the pod
// asks for it with setHostnameAsFQDN, which must then fit the kernel's 64
// bytes (upstream's GetNodenameForKernel).
func kernelHostname(hostname, domain string, setHostnameAsFQDN *bool) (string, error) {
	if setHostnameAsFQDN == nil || !*setHostnameAsFQDN || domain == "" {
		return hostname, nil
	}
	fqdn := hostname + "." + domain
	if len(fqdn) > hostnameMaxLen+1 {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)", fqdn, hostnameMaxLen+1, len(fqdn))
	}
	return fqdn, nil
}

// shouldMountHostsFile reports whether containers get the managed hosts
// file: pods with an address, and pods on the host network.
func shouldMountHostsFile(pod *v1.Pod, podIPs []string) bool {
	return len(podIPs) > 0 || pod.Spec.HostNetwork
}

// hostsFileContent is the pod's /etc/hosts: localhost, the pod's addresses
// under its hostname, and its hostAliases; a hostNetwork pod gets the node's
// file with its hostAliases appended.
func hostsFileContent(pod *v1.Pod, podIPs []string, hostname, domain string) ([]byte, error) {
	var b bytes.Buffer
	if pod.Spec.HostNetwork {
		node, err := os.ReadFile(nodeHostsPath)
		if err != nil {
			return nil, fmt.Errorf("reading the node's hosts file for a hostNetwork pod: %w", err)
		}
		b.WriteString(managedHostsHeaderWithHostNetwork)
		b.Write(node)
	} else {
		b.WriteString(managedHostsHeader)
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		for _, ip := range podIPs {
			if domain != "" {
				fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
			} else {
				fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
			}
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes(), nil
}

// hostsMount writes the pod's hosts file (again: the pod's addresses may
// have changed with a new sandbox) and mounts it at /etc/hosts.
func (m *Manager) hostsMount(pod *v1.Pod, podIPs []string, hostname, domain string) (*runtimeapi.Mount, error) {
	content, err := hostsFileContent(pod, podIPs, hostname, domain)
	if err != nil {
		return nil, err
	}
	path := m.podEtcHostsPath(pod.UID)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return nil, fmt.Errorf("writing the pod's hosts file: %w", err)
	}
	// WriteFile's mode is subject to the umask; the file must be readable
	// by any user a container runs as.
	if err := os.Chmod(path, 0o644); err != nil {
		return nil, fmt.Errorf("writing the pod's hosts file: %w", err)
	}
	return &runtimeapi.Mount{ContainerPath: etcHostsPath, HostPath: path}, nil
}
