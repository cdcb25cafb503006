// Package secadmit holds the kubelet's security admission of a pod: its
// sysctls against the allowlist (safe sysctls and allowed_unsafe_sysctls),
// AppArmor against the host, and what the runtime must support: user
// namespaces for `hostUsers: false` and supplementalGroupsPolicy Strict.
// A pod refused here fails with upstream's reason and message, never runs
// with less isolation than it asked for.
package secadmit

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pods/syncloop"
	"github.com/microlet/microlet/core/pods/sysctls"
	"github.com/microlet/microlet/core/runtime/cri"
)

// ReasonSysctlForbidden is the kubelet's reason for a pod refused for its
// sysctls (pkg/kubelet/sysctl.ForbiddenReason).
const ReasonSysctlForbidden = "SysctlForbidden"

// Reasons of refusals that have no kubelet admission reason: upstream
// fails the sandbox's creation for them (CreatePodSandboxConfigError,
// repeated forever); microlet refuses the pod once, with the same message.
const (
	ReasonUserNamespacesNotSupported = "UserNamespacesNotSupported"
	// ReasonSupplementalGroupsPolicy is the kubelet's
	// (lifecycle.SupplementalGroupsPolicyNotSupported).
	ReasonSupplementalGroupsPolicy = "SupplementalGroupsPolicyNotSupported"
)

// Verdict is a check's outcome: Reason empty means the pod passes.
type Verdict struct {
	Reason  string
	Message string
}

// Runtime is what the checks need to know of the runtime: its last status.
type Runtime interface {
	Health() (cri.RuntimeHealth, <-chan struct{})
}

// Admitter runs the checks as a syncloop admitter.
type Admitter struct {
	Sysctls *sysctls.Allowlist
	// AppArmor is whether the host enforces AppArmor (AppArmorEnabled).
	AppArmor bool
	Runtime  Runtime
}

var _ syncloop.PureAdmitter = (*Admitter)(nil)

// Name names the admitter in logs.
func (a *Admitter) Name() string { return "security" }

// Pure: the checks only read the pod, the node's settings and the runtime's status.
func (a *Admitter) Pure() bool { return true }

// Admit checks sysctls, AppArmor, then what the runtime supports, in the
// kubelet's order of admit handlers. Until the runtime's status is known
// a pod that needs a runtime feature waits.
func (a *Admitter) Admit(_ context.Context, pod *v1.Pod, _ []*v1.Pod) syncloop.Admission {
	if err := a.Sysctls.Check(pod); err != nil {
		return refuse(Verdict{Reason: ReasonSysctlForbidden, Message: err.Error()})
	}
	if v := CheckAppArmor(pod, a.AppArmor); v.Reason != "" {
		return refuse(v)
	}
	if !needsRuntimeFeature(pod) {
		return syncloop.Admission{Admit: true}
	}
	health, _ := a.Runtime.Health()
	if health.CheckedAt.IsZero() || health.Err != nil {
		return syncloop.Admission{Retry: true, Reason: "RuntimeStatusUnknown", Message: "waiting for the container runtime's status to know what it supports"}
	}
	if v := CheckRuntimeFeatures(pod, health); v.Reason != "" {
		return refuse(v)
	}
	return syncloop.Admission{Admit: true}
}

func refuse(v Verdict) syncloop.Admission {
	return syncloop.Admission{Reason: v.Reason, Message: v.Message}
}

func needsRuntimeFeature(pod *v1.Pod) bool {
	return wantsUserNamespace(pod) || wantsStrictSupplementalGroups(pod)
}

// wantsUserNamespace: `hostUsers: false`.
func wantsUserNamespace(pod *v1.Pod) bool {
	return pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers
}

// wantsStrictSupplementalGroups: supplementalGroupsPolicy Strict.
func wantsStrictSupplementalGroups(pod *v1.Pod) bool {
	psc := pod.Spec.SecurityContext
	return psc != nil && psc.SupplementalGroupsPolicy != nil && *psc.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict
}

// CheckRuntimeFeatures refuses a pod that asks for what the runtime does
// not do. `hostUsers: false` is refused whatever the runtime says: microlet
// does not allocate the user namespaces' ID ranges (upstream's userns
// manager), so a runtime that has them is told why with its own message.
func CheckRuntimeFeatures(pod *v1.Pod, health cri.RuntimeHealth) Verdict {
	if wantsUserNamespace(pod) {
		msg := "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
		if health.SupportsUserNamespaces("") {
			msg = "can't set `spec.hostUsers: false`, this node does not allocate user namespace ID ranges"
		}
		return Verdict{Reason: ReasonUserNamespacesNotSupported, Message: msg}
	}
	if wantsStrictSupplementalGroups(pod) && !health.SupportsSupplementalGroupsPolicy() {
		return Verdict{Reason: ReasonSupplementalGroupsPolicy, Message: fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict)}
	}
	return Verdict{}
}
