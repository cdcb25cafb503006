package podspec

import (
	"fmt"
	"math"
	"slices"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks the part of upstream's ValidatePodCreate
// (pkg/apis/core/validation/validation.go) that protects a node, with the
// API server's messages, plus the static pod rule that no API object may be
// referenced (PreventStaticPodAPIReferences). Run it on a defaulted pod with
// its static identity applied, as upstream does.
func Validate(pod *v1.Pod) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&pod.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, validatePodSpec(&pod.Spec, field.NewPath("spec"))...)
	return errs
}

var (
	supportedRestartPolicies = []v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever}
	supportedDNSPolicies     = []v1.DNSPolicy{v1.DNSClusterFirstWithHostNet, v1.DNSClusterFirst, v1.DNSDefault, v1.DNSNone}
)

func validatePodSpec(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	volumes, volumeErrs := validateVolumes(spec.Volumes, path.Child("volumes"))
	errs = append(errs, volumeErrs...)
	errs = append(errs, validateContainers(spec, volumes, path)...)
	errs = append(errs, validateHostPorts(spec, path)...)
	errs = append(errs, validateSecurityContexts(spec, path)...)
	if len(spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(path.Child("ephemeralContainers"), "cannot be set on create"))
	}

	switch {
	case spec.RestartPolicy == "":
		errs = append(errs, field.Required(path.Child("restartPolicy"), ""))
	case !slices.Contains(supportedRestartPolicies, spec.RestartPolicy):
		errs = append(errs, field.NotSupported(path.Child("restartPolicy"), spec.RestartPolicy, supportedRestartPolicies))
	}
	switch {
	case spec.DNSPolicy == "":
		errs = append(errs, field.Required(path.Child("dnsPolicy"), ""))
	case !slices.Contains(supportedDNSPolicies, spec.DNSPolicy):
		errs = append(errs, field.NotSupported(path.Child("dnsPolicy"), spec.DNSPolicy, supportedDNSPolicies))
	}
	if spec.TerminationGracePeriodSeconds != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*spec.TerminationGracePeriodSeconds, path.Child("terminationGracePeriodSeconds"))...)
	}
	if spec.ActiveDeadlineSeconds != nil {
		if d := *spec.ActiveDeadlineSeconds; d < 1 || d > math.MaxInt32 {
			errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), d, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	errs = append(errs, validateNoAPIReferences(spec, path)...)
	return errs
}

// validateHostPorts mirrors AccumulateUniqueHostPorts: two containers cannot
// bind the same host port and protocol.
func validateHostPorts(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	check := func(containers []v1.Container, containersPath *field.Path) {
		for i, c := range containers {
			for j, port := range c.Ports {
				if port.HostPort == 0 {
					continue
				}
				hostPort := fmt.Sprintf("%d/%s", port.HostPort, port.Protocol)
				if seen.Has(hostPort) {
					errs = append(errs, field.Duplicate(containersPath.Index(i).Child("ports").Index(j).Child("hostPort"), hostPort))
				}
				seen.Insert(hostPort)
			}
		}
	}
	check(spec.InitContainers, path.Child("initContainers"))
	check(spec.Containers, path.Child("containers"))
	return errs
}
