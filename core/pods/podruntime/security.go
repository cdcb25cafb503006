package podruntime

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// seccompDirName holds Localhost seccomp profiles under RootDir, as the
// kubelet's <root-dir>/seccomp.
const seccompDirName = "seccomp"

// defaultReadonlyPaths are the /proc paths a container sees read-only
// unless its procMount is Unmasked (upstream's, kept in sync with moby).
var defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}

// defaultMaskedPaths are the paths a container cannot see unless its
// procMount is Unmasked (upstream's, kept in sync with moby).
func defaultMaskedPaths() []string {
	paths := []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	for cpu := range runtime.NumCPU() {
		path := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/thermal_throttle", cpu)
		if _, err := os.Stat(path); err == nil {
			paths = append(paths, path)
		}
	}
	return paths
}

// effectiveSecurityContext is the container's security context with the
// pod's filling what the container does not set (upstream's
// DetermineEffectiveSecurityContext).
func effectiveSecurityContext(pod *v1.Pod, c *v1.Container) *v1.SecurityContext {
	sc := &v1.SecurityContext{}
	if psc := pod.Spec.SecurityContext; psc != nil {
		sc.SELinuxOptions = psc.SELinuxOptions
		sc.RunAsUser = psc.RunAsUser
		sc.RunAsGroup = psc.RunAsGroup
		sc.RunAsNonRoot = psc.RunAsNonRoot
		sc.SeccompProfile = psc.SeccompProfile
	}
	csc := c.SecurityContext
	if csc == nil {
		return sc
	}
	if csc.SELinuxOptions != nil {
		sc.SELinuxOptions = csc.SELinuxOptions
	}
	if csc.Capabilities != nil {
		sc.Capabilities = csc.Capabilities
	}
	if csc.Privileged != nil {
		sc.Privileged = csc.Privileged
	}
	if csc.RunAsUser != nil {
		sc.RunAsUser = csc.RunAsUser
	}
	if csc.RunAsGroup != nil {
		sc.RunAsGroup = csc.RunAsGroup
	}
	if csc.RunAsNonRoot != nil {
		sc.RunAsNonRoot = csc.RunAsNonRoot
	}
	if csc.ReadOnlyRootFilesystem != nil {
		sc.ReadOnlyRootFilesystem = csc.ReadOnlyRootFilesystem
	}
	if csc.AllowPrivilegeEscalation != nil {
		sc.AllowPrivilegeEscalation = csc.AllowPrivilegeEscalation
	}
	if csc.ProcMount != nil {
		sc.ProcMount = csc.ProcMount
	}
	if csc.SeccompProfile != nil {
		sc.SeccompProfile = csc.SeccompProfile
	}
	return sc
}

// imageUser is who an image runs as: a UID, or a name the runtime resolves.
type imageUser struct {
	uid      *int64
	username string
}

// containerSecurityContext is the runtime security context of a container
// (upstream's determineEffectiveSecurityContext; user namespaces are
// refused at admission, see core/pods/secadmit).
func (m *Manager) containerSecurityContext(pod *v1.Pod, c *v1.Container, user imageUser) (*runtimeapi.LinuxContainerSecurityContext, error) {
	sc := effectiveSecurityContext(pod, c)
	if err := verifyRunAsNonRoot(pod, c, sc, user); err != nil {
		return nil, err
	}
	seccomp, err := m.seccompProfile(sc.SeccompProfile, m.opts.SeccompDefault)
	if err != nil {
		return nil, err
	}
	apparmor, apparmorName, err := appArmorProfile(pod, c)
	if err != nil {
		return nil, err
	}
	out := &runtimeapi.LinuxContainerSecurityContext{
		Capabilities:     runtimeCapabilities(sc.Capabilities),
		SelinuxOptions:   runtimeSELinuxOptions(sc.SELinuxOptions),
		Privileged:       sc.Privileged != nil && *sc.Privileged,
		ReadonlyRootfs:   sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem,
		NamespaceOptions: namespaceOptions(pod),
		Seccomp:          seccomp,
		// Only an explicit allowPrivilegeEscalation: false sets no_new_privs.
		NoNewPrivs:    sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
		MaskedPaths:   []string{},
		ReadonlyPaths: []string{},
		Apparmor:      apparmor,
		// Runtimes older than CRI 1.30 (containerd 1.6) read only the
		// deprecated string, which upstream still sends beside it.
		ApparmorProfile: apparmorName,
	}
	if sc.ProcMount == nil || *sc.ProcMount != v1.UnmaskedProcMount {
		out.MaskedPaths = defaultMaskedPaths()
		out.ReadonlyPaths = defaultReadonlyPaths
	}
	switch {
	case sc.RunAsUser != nil:
		out.RunAsUser = &runtimeapi.Int64Value{Value: *sc.RunAsUser}
	case user.uid != nil:
		out.RunAsUser = &runtimeapi.Int64Value{Value: *user.uid}
	default:
		out.RunAsUsername = user.username
	}
	if sc.RunAsGroup != nil {
		out.RunAsGroup = &runtimeapi.Int64Value{Value: *sc.RunAsGroup}
	}
	out.SupplementalGroups = supplementalGroups(pod)
	if out.SupplementalGroupsPolicy, err = supplementalGroupsPolicy(pod); err != nil {
		return nil, err
	}
	return out, nil
}

// verifyRunAsNonRoot refuses a container with runAsNonRoot that would run as
// root, as upstream.
func verifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, sc *v1.SecurityContext, user imageUser) error {
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		return nil
	}
	switch {
	case sc.RunAsUser != nil:
		if *sc.RunAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podFullName(pod), c.Name)
		}
	case user.uid == nil && user.username != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", user.username, podFullName(pod), c.Name)
	case user.uid != nil && *user.uid == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podFullName(pod), c.Name)
	case user.uid != nil && len(validation.IsValidUserID(*user.uid)) != 0:
		return fmt.Errorf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): %s (pod: %q, container: %s)",
			*user.uid, math.MaxInt32, strings.Join(validation.IsValidUserID(*user.uid), "; "), podFullName(pod), c.Name)
	}
	return nil
}

// seccompProfile is upstream's fieldSeccompProfile: the profile the API
// names, Localhost ones under <RootDir>/seccomp; unset is Unconfined for
// containers unless seccomp_default is on, and RuntimeDefault for
// sandboxes.
func (m *Manager) seccompProfile(p *v1.SeccompProfile, fallbackToRuntimeDefault bool) (*runtimeapi.SecurityProfile, error) {
	switch {
	case p == nil && fallbackToRuntimeDefault, p != nil && p.Type == v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case p != nil && p.Type == v1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, fmt.Errorf("localhostProfile must be set if seccompProfile type is Localhost")
		}
		return &runtimeapi.SecurityProfile{
			ProfileType:  runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: filepath.Join(m.opts.RootDir, seccompDirName, *p.LocalhostProfile),
		}, nil
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
}

// namespaceOptions maps hostNetwork, hostPID, hostIPC and
// shareProcessNamespace to the runtime's namespace modes. A pod that does
// not ask for a user namespace of its own (hostUsers unset or true) is
// said to use the node's, as the kubelet's user namespace manager says it
// with UserNamespacesSupport on (its default since v1.33).
func namespaceOptions(pod *v1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		ns.UsernsOptions = &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns
}

// supplementalGroupsPolicy is the pod's policy in the runtime's terms;
// Strict reaches here only if the runtime said it supports it (admission).
func supplementalGroupsPolicy(pod *v1.Pod) (runtimeapi.SupplementalGroupsPolicy, error) {
	psc := pod.Spec.SecurityContext
	if psc == nil || psc.SupplementalGroupsPolicy == nil {
		return runtimeapi.SupplementalGroupsPolicy_Merge, nil
	}
	v, ok := runtimeapi.SupplementalGroupsPolicy_value[string(*psc.SupplementalGroupsPolicy)]
	if !ok {
		return 0, fmt.Errorf("unsupported supplementalGroupsPolicy: %s", *psc.SupplementalGroupsPolicy)
	}
	return runtimeapi.SupplementalGroupsPolicy(v), nil
}

// AppArmorProfile is the container's AppArmor profile (upstream's
// apparmor.GetProfile): its own field, then the deprecated per-container
// annotation, then the pod's field; nil if none.
func AppArmorProfile(pod *v1.Pod, c *v1.Container) *v1.AppArmorProfile {
	if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
		return c.SecurityContext.AppArmorProfile
	}
	if val, ok := pod.Annotations[v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name]; ok {
		switch {
		case val == v1.DeprecatedAppArmorBetaProfileRuntimeDefault:
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}
		case val == v1.DeprecatedAppArmorBetaProfileNameUnconfined:
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}
		case strings.HasPrefix(val, v1.DeprecatedAppArmorBetaProfileNamePrefix):
			name := strings.TrimPrefix(val, v1.DeprecatedAppArmorBetaProfileNamePrefix)
			return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
		}
	}
	if psc := pod.Spec.SecurityContext; psc != nil && psc.AppArmorProfile != nil {
		return psc.AppArmorProfile
	}
	return nil
}

// appArmorProfile is the container's profile for the runtime, in the CRI
// field and the deprecated string (upstream's getAppArmorProfile).
func appArmorProfile(pod *v1.Pod, c *v1.Container) (*runtimeapi.SecurityProfile, string, error) {
	p := AppArmorProfile(pod, c)
	if p == nil {
		return nil, "", nil
	}
	switch p.Type {
	case v1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, v1.DeprecatedAppArmorBetaProfileRuntimeDefault, nil
	case v1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, v1.DeprecatedAppArmorBetaProfileNameUnconfined, nil
	case v1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil {
			return nil, "", errors.New("missing localhost apparmor profile name")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			v1.DeprecatedAppArmorBetaProfileNamePrefix + *p.LocalhostProfile, nil
	}
	return nil, "", fmt.Errorf("unknown apparmor profile type: %q", p.Type)
}

// supplementalGroups are the pod's fsGroup and supplementalGroups.
func supplementalGroups(pod *v1.Pod) []int64 {
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return nil
	}
	var groups []int64
	if psc.FSGroup != nil {
		groups = append(groups, *psc.FSGroup)
	}
	return append(groups, psc.SupplementalGroups...)
}

func runtimeCapabilities(c *v1.Capabilities) *runtimeapi.Capability {
	if c == nil {
		return nil
	}
	out := &runtimeapi.Capability{
		AddCapabilities:  make([]string, len(c.Add)),
		DropCapabilities: make([]string, len(c.Drop)),
	}
	for i, name := range c.Add {
		out.AddCapabilities[i] = string(name)
	}
	for i, name := range c.Drop {
		out.DropCapabilities[i] = string(name)
	}
	return out
}

func runtimeSELinuxOptions(o *v1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

// hasPrivilegedContainer reports whether any container of the pod is
// privileged, which makes the sandbox privileged.
func hasPrivilegedContainer(pod *v1.Pod) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if sc := list[i].SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
				return true
			}
		}
	}
	return false
}
