package podspec

import (
	"fmt"
	"path"
	"regexp"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedProcMounts = []v1.ProcMountType{v1.DefaultProcMount, v1.UnmaskedProcMount}
	// sysctlName is upstream's SysctlContainSlashFmt.
	sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)
)

// validateSecurityContexts mirrors the parts of validatePodSpecSecurityContext
// and ValidateSecurityContext a node relies on: IDs in range, procMount
// Unmasked only with hostUsers false, seccomp profiles that name a file
// exactly when Localhost, no allowPrivilegeEscalation false beside what
// implies it, sysctl names well formed and unique.
func validateSecurityContexts(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	hostUsers := spec.HostUsers == nil || *spec.HostUsers
	if psc := spec.SecurityContext; psc != nil {
		p := path.Child("securityContext")
		errs = append(errs, validateIDs(psc.RunAsUser, psc.RunAsGroup, p)...)
		errs = append(errs, validateSeccomp(psc.SeccompProfile, p.Child("seccompProfile"))...)
		seen := map[string]bool{}
		for i, s := range psc.Sysctls {
			sp := p.Child("sysctls").Index(i).Child("name")
			switch {
			case len(s.Name) == 0:
				errs = append(errs, field.Required(sp, ""))
			case len(s.Name) > 253 || !sysctlName.MatchString(s.Name):
				errs = append(errs, field.Invalid(sp, s.Name, fmt.Sprintf("must have at most 253 characters and match regex %s", sysctlName)))
			case seen[s.Name]:
				errs = append(errs, field.Duplicate(sp, s.Name))
			}
			seen[s.Name] = true
		}
	}
	check := func(list []v1.Container, lp *field.Path) {
		for i := range list {
			if sc := list[i].SecurityContext; sc != nil {
				errs = append(errs, validateSecurityContext(sc, lp.Index(i).Child("securityContext"), hostUsers)...)
			}
		}
	}
	check(spec.InitContainers, path.Child("initContainers"))
	check(spec.Containers, path.Child("containers"))
	return errs
}

func validateSecurityContext(sc *v1.SecurityContext, p *field.Path, hostUsers bool) field.ErrorList {
	errs := validateIDs(sc.RunAsUser, sc.RunAsGroup, p)
	if sc.ProcMount != nil {
		if !slices.Contains(supportedProcMounts, *sc.ProcMount) {
			errs = append(errs, field.NotSupported(p.Child("procMount"), *sc.ProcMount, supportedProcMounts))
		}
		if hostUsers && *sc.ProcMount == v1.UnmaskedProcMount {
			errs = append(errs, field.Invalid(p.Child("procMount"), sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	errs = append(errs, validateSeccomp(sc.SeccompProfile, p.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(p, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(p, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	return errs
}

func validateIDs(user, group *int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if user != nil {
		for _, msg := range validation.IsValidUserID(*user) {
			errs = append(errs, field.Invalid(p.Child("runAsUser"), *user, msg))
		}
	}
	if group != nil {
		for _, msg := range validation.IsValidGroupID(*group) {
			errs = append(errs, field.Invalid(p.Child("runAsGroup"), *group, msg))
		}
	}
	return errs
}

var supportedSeccompTypes = []v1.SeccompProfileType{v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined, v1.SeccompProfileTypeLocalhost}

func validateSeccomp(sp *v1.SeccompProfile, p *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	if !slices.Contains(supportedSeccompTypes, sp.Type) {
		errs = append(errs, field.NotSupported(p.Child("type"), sp.Type, supportedSeccompTypes))
	}
	switch {
	case sp.Type == v1.SeccompProfileTypeLocalhost && sp.LocalhostProfile == nil:
		errs = append(errs, field.Required(p.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
	case sp.Type == v1.SeccompProfileTypeLocalhost && path.IsAbs(*sp.LocalhostProfile):
		errs = append(errs, field.Invalid(p.Child("localhostProfile"), *sp.LocalhostProfile, "must be a relative path"))
	case sp.Type == v1.SeccompProfileTypeLocalhost:
		errs = append(errs, validatePathNoBacksteps(*sp.LocalhostProfile, p.Child("localhostProfile"))...)
	case sp.LocalhostProfile != nil:
		errs = append(errs, field.Invalid(p.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
	}
	return errs
}
