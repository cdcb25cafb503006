package podspec

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedHTTPSchemes = []v1.URIScheme{v1.URISchemeHTTP, v1.URISchemeHTTPS}

// validateProbesAndLifecycle mirrors validateLivenessProbe,
// validateReadinessProbe, validateStartupProbe and validateLifecycle.
func validateProbesAndLifecycle(c *v1.Container, grace *int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if probe := c.LivenessProbe; probe != nil {
		errs = append(errs, validateProbe(probe, p.Child("livenessProbe"))...)
		errs = append(errs, successThresholdOne(probe, p.Child("livenessProbe"))...)
	}
	if probe := c.StartupProbe; probe != nil {
		errs = append(errs, validateProbe(probe, p.Child("startupProbe"))...)
		errs = append(errs, successThresholdOne(probe, p.Child("startupProbe"))...)
	}
	if probe := c.ReadinessProbe; probe != nil {
		errs = append(errs, validateProbe(probe, p.Child("readinessProbe"))...)
		if probe.TerminationGracePeriodSeconds != nil {
			errs = append(errs, field.Invalid(p.Child("readinessProbe", "terminationGracePeriodSeconds"), *probe.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if c.Lifecycle != nil {
		for _, hook := range []struct {
			name    string
			handler *v1.LifecycleHandler
		}{{"postStart", c.Lifecycle.PostStart}, {"preStop", c.Lifecycle.PreStop}} {
			if hook.handler != nil {
				errs = append(errs, validateLifecycleHandler(hook.handler, grace, p.Child("lifecycle", hook.name))...)
			}
		}
	}
	return errs
}

// successThresholdOne: liveness and startup probes succeed once or not at all.
func successThresholdOne(probe *v1.Probe, p *field.Path) field.ErrorList {
	if probe.SuccessThreshold != 1 {
		return field.ErrorList{field.Invalid(p.Child("successThreshold"), probe.SuccessThreshold, "must be 1")}
	}
	return nil
}

// validateProbe mirrors its upstream namesake.
func validateProbe(probe *v1.Probe, p *field.Path) field.ErrorList {
	h := &probe.ProbeHandler
	errs := validateHandlers(p, []handler{
		{"exec", h.Exec != nil, func(hp *field.Path) field.ErrorList { return validateExecAction(h.Exec, hp) }},
		{"httpGet", h.HTTPGet != nil, func(hp *field.Path) field.ErrorList { return validateHTTPGetAction(h.HTTPGet, hp) }},
		{"tcpSocket", h.TCPSocket != nil, func(hp *field.Path) field.ErrorList { return validatePortNumOrName(h.TCPSocket.Port, hp.Child("port")) }},
		{"grpc", h.GRPC != nil, func(hp *field.Path) field.ErrorList { return validatePortNum(h.GRPC.Port, hp.Child("port")) }},
	})
	errs = append(errs, nonNegative(probe.InitialDelaySeconds, p.Child("initialDelaySeconds"))...)
	errs = append(errs, nonNegative(probe.TimeoutSeconds, p.Child("timeoutSeconds"))...)
	errs = append(errs, nonNegative(probe.PeriodSeconds, p.Child("periodSeconds"))...)
	errs = append(errs, nonNegative(probe.SuccessThreshold, p.Child("successThreshold"))...)
	errs = append(errs, nonNegative(probe.FailureThreshold, p.Child("failureThreshold"))...)
	if g := probe.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

// validateLifecycleHandler mirrors validateHandler for a postStart or
// preStop hook.
func validateLifecycleHandler(h *v1.LifecycleHandler, grace *int64, p *field.Path) field.ErrorList {
	return validateHandlers(p, []handler{
		{"exec", h.Exec != nil, func(hp *field.Path) field.ErrorList { return validateExecAction(h.Exec, hp) }},
		{"httpGet", h.HTTPGet != nil, func(hp *field.Path) field.ErrorList { return validateHTTPGetAction(h.HTTPGet, hp) }},
		{"tcpSocket", h.TCPSocket != nil, func(hp *field.Path) field.ErrorList { return validatePortNumOrName(h.TCPSocket.Port, hp.Child("port")) }},
		{"sleep", h.Sleep != nil, func(hp *field.Path) field.ErrorList { return validateSleepAction(h.Sleep, grace, hp) }},
	})
}

// handler is one action a probe or hook may take.
type handler struct {
	name     string
	set      bool
	validate func(*field.Path) field.ErrorList
}

// validateHandlers mirrors upstream's validateHandler: exactly one action;
// every action after the first is reported where it is.
func validateHandlers(p *field.Path, handlers []handler) field.ErrorList {
	var errs field.ErrorList
	found := false
	for _, h := range handlers {
		if !h.set {
			continue
		}
		if found {
			errs = append(errs, field.Forbidden(p.Child(h.name), "may not specify more than 1 handler type"))
			continue
		}
		found = true
		errs = append(errs, h.validate(p.Child(h.name))...)
	}
	if !found {
		errs = append(errs, field.Required(p, "must specify a handler type"))
	}
	return errs
}

func validateExecAction(exec *v1.ExecAction, p *field.Path) field.ErrorList {
	if len(exec.Command) == 0 {
		return field.ErrorList{field.Required(p.Child("command"), "")}
	}
	return nil
}

func validateHTTPGetAction(get *v1.HTTPGetAction, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if get.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	errs = append(errs, validatePortNumOrName(get.Port, p.Child("port"))...)
	if !slices.Contains(supportedHTTPSchemes, get.Scheme) {
		errs = append(errs, field.NotSupported(p.Child("scheme"), get.Scheme, supportedHTTPSchemes))
	}
	for i, header := range get.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(header.Name) {
			errs = append(errs, field.Invalid(p.Child("httpHeaders").Index(i).Child("name"), header.Name, msg))
		}
	}
	return errs
}

// validateSleepAction mirrors its upstream namesake with
// PodLifecycleSleepActionAllowZero (GA): zero is allowed.
func validateSleepAction(sleep *v1.SleepAction, grace *int64, p *field.Path) field.ErrorList {
	if sleep.Seconds < 0 || (grace != nil && sleep.Seconds > *grace) {
		limit := "terminationGracePeriodSeconds"
		if grace != nil {
			limit = fmt.Sprintf("terminationGracePeriodSeconds (%d)", *grace)
		}
		return field.ErrorList{field.Invalid(p.Child("seconds"), sleep.Seconds, "must be non-negative and less than "+limit)}
	}
	return nil
}

// validatePortNumOrName mirrors ValidatePortNumOrName.
func validatePortNumOrName(port intstr.IntOrString, p *field.Path) field.ErrorList {
	if port.Type == intstr.Int {
		return validatePortNum(port.IntVal, p)
	}
	var errs field.ErrorList
	for _, msg := range validation.IsValidPortName(port.StrVal) {
		errs = append(errs, field.Invalid(p, port.StrVal, msg))
	}
	return errs
}

func validatePortNum(port int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidPortNum(int(port)) {
		errs = append(errs, field.Invalid(p, port, msg))
	}
	return errs
}
