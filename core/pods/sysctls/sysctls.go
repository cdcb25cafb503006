// Package sysctls is the kubelet's sysctl allowlist (pkg/kubelet/sysctl):
// the safe sysctls a kernel namespaces and allowed_unsafe_sysctls, checked
// against a pod's. The config check and the security admitter share it.
package sysctls

import (
	"fmt"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// safeSysctls are upstream's safe sysctls (pkg/kubelet/sysctl), each with
// the first kernel that namespaces it; "" means every kernel does.
var safeSysctls = []struct{ name, kernel string }{
	{"kernel.shm_rmid_forced", ""},
	{"net.ipv4.ip_local_port_range", ""},
	{"net.ipv4.tcp_syncookies", ""},
	{"net.ipv4.ping_group_range", ""},
	{"net.ipv4.ip_unprivileged_port_start", ""},
	{"net.ipv4.ip_local_reserved_ports", "3.16"},
	{"net.ipv4.tcp_keepalive_time", "4.5"},
	{"net.ipv4.tcp_fin_timeout", "4.6"},
	{"net.ipv4.tcp_keepalive_intvl", "4.5"},
	{"net.ipv4.tcp_keepalive_probes", "4.5"},
	{"net.ipv4.tcp_rmem", "4.15"},
	{"net.ipv4.tcp_wmem", "4.15"},
}

// Safe are the safe sysctls the kernel of kernelRelease (uname's, as
// machine.Identity's KernelVersion) namespaces; an unknown release ("")
// gets only those every kernel namespaces, as upstream.
func Safe(kernelRelease string) []string {
	kernel, _ := version.ParseGeneric(kernelRelease)
	var out []string
	for _, s := range safeSysctls {
		if s.kernel == "" || kernel != nil && kernel.AtLeast(version.MustParseGeneric(s.kernel)) {
			out = append(out, s.name)
		}
	}
	return out
}

// sysctlPattern is upstream's IsValidSysctlPattern: dotted or slashed
// segments, the last of which may end in "*".
var sysctlPattern = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]$`)

// Allowlist is the kubelet's sysctl allowlist (pkg/kubelet/sysctl): safe
// sysctls and allowed_unsafe_sysctls, names or prefixes ending in "*",
// each with the namespace it lives in.
type Allowlist struct {
	sysctls  map[string]utilsysctl.Namespace
	prefixes map[string]utilsysctl.Namespace
}

// NewAllowlist checks the patterns as upstream's NewAllowlist does: each
// must be a valid pattern of a namespaced sysctl.
func NewAllowlist(patterns []string) (*Allowlist, error) {
	w := &Allowlist{sysctls: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, s := range patterns {
		if len(s) > 253 || !sysctlPattern.MatchString(s) {
			return nil, fmt.Errorf("sysctl %q must have at most 253 characters and match regex %s", s, sysctlPattern)
		}
		ns, nameOrPrefix, prefixed := utilsysctl.GetNamespace(s)
		if ns == utilsysctl.UnknownNamespace {
			return nil, fmt.Errorf("the sysctls %q are not known to be namespaced", nameOrPrefix)
		}
		if prefixed {
			w.prefixes[nameOrPrefix] = ns
		} else {
			w.sysctls[nameOrPrefix] = ns
		}
	}
	return w, nil
}

// validate says why one sysctl of a pod may not be set, with upstream's
// words, or nil.
func (w *Allowlist) validate(sysctl string, hostNet, hostIPC bool) error {
	sysctl = utilsysctl.NormalizeName(sysctl)
	ns, found := w.sysctls[sysctl]
	if !found {
		for p, pns := range w.prefixes {
			if strings.HasPrefix(sysctl, p) {
				ns, found = pns, true
				break
			}
		}
	}
	switch {
	case !found:
		return fmt.Errorf("%q not allowlisted", sysctl)
	case ns == utilsysctl.IPCNamespace && hostIPC, ns == utilsysctl.NetNamespace && hostNet:
		return fmt.Errorf("%q not allowed with host %s enabled", sysctl, ns)
	}
	return nil
}

// Check says why a pod may not have its sysctls: one the allowlist does
// not hold, or one in a namespace the pod shares with the host; the
// message is upstream's. Nil when it may.
func (w *Allowlist) Check(pod *v1.Pod) error {
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return nil
	}
	for _, s := range psc.Sysctls {
		if err := w.validate(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
			return fmt.Errorf("forbidden sysctl: %v", err)
		}
	}
	return nil
}
