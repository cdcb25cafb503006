package decide

import (
	"fmt"
	"strings"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// typeNames are the probe types as the pod spec names them, for messages.
var typeNames = map[probesv1.ProbeType]string{
	probesv1.ProbeType_PROBE_TYPE_LIVENESS:  "liveness",
	probesv1.ProbeType_PROBE_TYPE_READINESS: "readiness",
	probesv1.ProbeType_PROBE_TYPE_STARTUP:   "startup",
}

// TypeName is the probe type as the pod spec names it: liveness,
// readiness or startup.
func TypeName(t probesv1.ProbeType) string {
	if name, ok := typeNames[t]; ok {
		return name
	}
	return t.String()
}

// Validate returns every problem with c's probes, each naming the field and
// what was expected; none when the plugin can run them. The core sends
// probes with the API server's defaults applied and validated, so a problem
// here means a core (or a client of the plugin) that does not.
func Validate(c *probesv1.ContainerProbes) []string {
	var problems []string
	if c.GetContainerId() == "" {
		problems = append(problems, "container_id: must not be empty")
	}
	for _, t := range Types {
		p := ProbeOf(c, t)
		if p == nil {
			continue
		}
		for _, problem := range validateProbe(t, p) {
			problems = append(problems, TypeName(t)+"."+problem)
		}
	}
	return problems
}

func validateProbe(t probesv1.ProbeType, p *probesv1.Probe) []string {
	var problems []string
	fail := func(field, format string, args ...any) {
		problems = append(problems, field+": "+fmt.Sprintf(format, args...))
	}
	for _, f := range []struct {
		field   string
		value   int32
		minimum int32
	}{
		{"initial_delay_seconds", p.GetInitialDelaySeconds(), 0},
		{"timeout_seconds", p.GetTimeoutSeconds(), 1},
		{"period_seconds", p.GetPeriodSeconds(), 1},
		{"success_threshold", p.GetSuccessThreshold(), 1},
		{"failure_threshold", p.GetFailureThreshold(), 1},
	} {
		if f.value < f.minimum {
			fail(f.field, "must be at least %d, got %d", f.minimum, f.value)
		}
	}
	if t != probesv1.ProbeType_PROBE_TYPE_READINESS && p.GetSuccessThreshold() != 1 {
		fail("success_threshold", "must be 1 for %s probes, got %d", TypeName(t), p.GetSuccessThreshold())
	}
	if p.TerminationGracePeriodSeconds != nil {
		switch {
		case t == probesv1.ProbeType_PROBE_TYPE_READINESS:
			fail("termination_grace_period_seconds", "must not be set for readiness probes")
		case p.GetTerminationGracePeriodSeconds() <= 0:
			fail("termination_grace_period_seconds", "must be greater than 0, got %d", p.GetTerminationGracePeriodSeconds())
		}
	}
	switch h := p.GetHandler().(type) {
	case *probesv1.Probe_Exec:
		if len(h.Exec.GetCommand()) == 0 {
			fail("exec.command", "must not be empty")
		}
	case *probesv1.Probe_HttpGet:
		if s := strings.ToLower(h.HttpGet.GetScheme()); s != "" && s != "http" && s != "https" {
			fail("http_get.scheme", "expected HTTP or HTTPS, got %q", h.HttpGet.GetScheme())
		}
		if problem := validatePort(h.HttpGet.GetPort(), h.HttpGet.GetPortName()); problem != "" {
			fail("http_get.port", "%s", problem)
		}
	case *probesv1.Probe_TcpSocket:
		if problem := validatePort(h.TcpSocket.GetPort(), h.TcpSocket.GetPortName()); problem != "" {
			fail("tcp_socket.port", "%s", problem)
		}
	case *probesv1.Probe_Grpc:
		if port := h.Grpc.GetPort(); port < 1 || port > 65535 {
			fail("grpc.port", "expected a port number from 1 to 65535, got %d", port)
		}
	default:
		fail("handler", "expected one of exec, http_get, tcp_socket or grpc, got none")
	}
	return problems
}

// validatePort checks a port given by number or by name; a name is
// resolved against the container's ports when the probe runs, as upstream.
func validatePort(number int32, name string) string {
	if name != "" {
		if number != 0 {
			return fmt.Sprintf("expected a port number or a port name, got both (%d and %q)", number, name)
		}
		return ""
	}
	if number < 1 || number > 65535 {
		return fmt.Sprintf("expected a port number from 1 to 65535 or a port name, got %d", number)
	}
	return ""
}
