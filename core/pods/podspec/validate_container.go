package podspec

import (
	"fmt"
	"path"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedPullPolicies               = []v1.PullPolicy{v1.PullAlways, v1.PullIfNotPresent, v1.PullNever}
	supportedTerminationMessagePolicies = []v1.TerminationMessagePolicy{v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError}
	supportedPortProtocols              = []v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP}
)

// validateContainers mirrors validateInitContainers and validateContainers:
// names are unique across init and regular containers, init containers may
// only restart Always (sidecars), and probes and lifecycle hooks are allowed
// where upstream allows them.
func validateContainers(spec *v1.PodSpec, volumes sets.Set[string], specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	grace := spec.TerminationGracePeriodSeconds
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		p := specPath.Child("initContainers").Index(i)
		errs = append(errs, validateContainer(c, names, volumes, p)...)
		sidecar := false
		if c.RestartPolicy != nil {
			if *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
				sidecar = true
			} else {
				errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *c.RestartPolicy, []v1.ContainerRestartPolicy{v1.ContainerRestartPolicyAlways}))
			}
		}
		if sidecar {
			errs = append(errs, validateProbesAndLifecycle(c, grace, p)...)
			continue
		}
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"lifecycle", c.Lifecycle != nil},
			{"livenessProbe", c.LivenessProbe != nil},
			{"readinessProbe", c.ReadinessProbe != nil},
			{"startupProbe", c.StartupProbe != nil},
		} {
			if f.set {
				errs = append(errs, field.Forbidden(p.Child(f.name), "may not be set for init containers without restartPolicy=Always"))
			}
		}
	}
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(specPath.Child("containers"), ""))
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		p := specPath.Child("containers").Index(i)
		errs = append(errs, validateContainer(c, names, volumes, p)...)
		if c.RestartPolicy != nil {
			errs = append(errs, field.Forbidden(p.Child("restartPolicy"), "may not be set for non-init containers"))
		}
		errs = append(errs, validateProbesAndLifecycle(c, grace, p)...)
	}
	return errs
}

// validateContainer mirrors validateContainerCommon for what a node needs.
// names collects container names across the pod.
func validateContainer(c *v1.Container, names sets.Set[string], volumes sets.Set[string], p *field.Path) field.ErrorList {
	errs := validateDNS1123Label(c.Name, p.Child("name"))
	if names.Has(c.Name) {
		errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
	} else if c.Name != "" {
		names.Insert(c.Name)
	}
	switch {
	case c.Image == "":
		errs = append(errs, field.Required(p.Child("image"), ""))
	case strings.TrimSpace(c.Image) != c.Image:
		errs = append(errs, field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	switch {
	case c.ImagePullPolicy == "":
		errs = append(errs, field.Required(p.Child("imagePullPolicy"), ""))
	case !slices.Contains(supportedPullPolicies, c.ImagePullPolicy):
		errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), c.ImagePullPolicy, supportedPullPolicies))
	}
	switch {
	case c.TerminationMessagePolicy == "":
		errs = append(errs, field.Required(p.Child("terminationMessagePolicy"), ""))
	case !slices.Contains(supportedTerminationMessagePolicies, c.TerminationMessagePolicy):
		errs = append(errs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, supportedTerminationMessagePolicies))
	}
	errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, volumes, p.Child("volumeMounts"))...)
	errs = append(errs, validateResources(&c.Resources, p.Child("resources"))...)
	return errs
}

// validateContainerPorts mirrors its upstream namesake.
func validateContainerPorts(ports []v1.ContainerPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		idx := p.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(idx.Child("name"), port.Name, msg))
				}
			} else if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(idx.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(idx.Child("containerPort"), ""))
		} else {
			errs = append(errs, validatePortNum(port.ContainerPort, idx.Child("containerPort"))...)
		}
		if port.HostPort != 0 {
			errs = append(errs, validatePortNum(port.HostPort, idx.Child("hostPort"))...)
		}
		switch {
		case port.Protocol == "":
			errs = append(errs, field.Required(idx.Child("protocol"), ""))
		case !slices.Contains(supportedPortProtocols, port.Protocol):
			errs = append(errs, field.NotSupported(idx.Child("protocol"), port.Protocol, supportedPortProtocols))
		}
	}
	return errs
}

// validateVolumeMounts mirrors ValidateVolumeMounts: every mount names a
// volume of the pod, at a unique path; a subPath stays inside the volume.
func validateVolumeMounts(mounts []v1.VolumeMount, volumes sets.Set[string], p *field.Path) field.ErrorList {
	var errs field.ErrorList
	mountPoints := sets.New[string]()
	for i, m := range mounts {
		idx := p.Index(i)
		switch {
		case m.Name == "":
			errs = append(errs, field.Required(idx.Child("name"), ""))
		case !volumes.Has(m.Name):
			errs = append(errs, field.NotFound(idx.Child("name"), m.Name))
		}
		switch {
		case m.MountPath == "":
			errs = append(errs, field.Required(idx.Child("mountPath"), ""))
		case mountPoints.Has(m.MountPath):
			errs = append(errs, field.Invalid(idx.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPoints.Insert(m.MountPath)
		if m.SubPath != "" {
			if path.IsAbs(m.SubPath) {
				errs = append(errs, field.Invalid(idx.Child("subPath"), m.SubPath, "must be a relative path"))
			}
			errs = append(errs, validatePathNoBacksteps(m.SubPath, idx.Child("subPath"))...)
		}
	}
	return errs
}

// validateResources mirrors ValidateResourceRequirements for quantities:
// none negative, requests no more than limits, and requests equal to limits
// for resources that cannot be overcommitted (extended resources,
// hugepages), which need a limit.
func validateResources(r *v1.ResourceRequirements, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	limitsPath, requestsPath := p.Child("limits"), p.Child("requests")
	for _, name := range sortedResourceNames(r.Limits) {
		limit := r.Limits[name]
		if limit.Sign() < 0 {
			errs = append(errs, field.Invalid(limitsPath.Key(string(name)), limit.String(), "must be greater than or equal to 0"))
		}
	}
	for _, name := range sortedResourceNames(r.Requests) {
		request := r.Requests[name]
		if request.Sign() < 0 {
			errs = append(errs, field.Invalid(requestsPath.Key(string(name)), request.String(), "must be greater than or equal to 0"))
		}
		limit, limited := r.Limits[name]
		switch {
		case !limited && !overcommitAllowed(name):
			errs = append(errs, field.Required(limitsPath, "Limit must be set for non overcommitable resources"))
		case !limited:
		case !overcommitAllowed(name) && request.Cmp(limit) != 0:
			errs = append(errs, field.Invalid(requestsPath, request.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case request.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(requestsPath, request.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return errs
}

// overcommitAllowed mirrors helper.IsOvercommitAllowed: native resources
// other than hugepages.
func overcommitAllowed(name v1.ResourceName) bool {
	native := !strings.Contains(string(name), "/") || strings.Contains(string(name), "kubernetes.io/")
	return native && !strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

func sortedResourceNames(list v1.ResourceList) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// nonNegative wraps apivalidation.ValidateNonnegativeField for int32 fields.
func nonNegative(value int32, p *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(int64(value), p)
}
