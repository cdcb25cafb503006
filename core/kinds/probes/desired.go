package probes

import (
	"github.com/microlet/microlet/core/pods/podspec"
	"google.golang.org/protobuf/types/known/timestamppb"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/microlet/microlet/core/runtime/container"
	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// desiredContainers are the running container instances of pod, by
// container ID, with what the plugin is to probe of each: the pod's
// containers and its sidecars (init containers that restart always), as
// upstream's AddPod takes them. withProbes is false when no plugin probes:
// the instances are then known, without probes.
func desiredContainers(pod *v1.Pod, runtime *container.PodStatus, nodeIPs []string, withProbes bool) map[string]*containerEntry {
	podIP := podIP(pod, runtime, nodeIPs)
	terminating := pod.DeletionTimestamp != nil
	out := map[string]*containerEntry{}
	for _, c := range probedContainers(pod) {
		st := runtime.Container(c.Name)
		if st == nil || st.State != container.StateRunning {
			continue
		}
		e := &containerEntry{podUID: pod.UID, podName: pod.Name, podNamespace: pod.Namespace, name: c.Name, ref: containerRef(pod, c.Name), terminating: terminating}
		if withProbes {
			specs := [len(probeTypes)]*v1.Probe{Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Startup: c.StartupProbe}
			for _, t := range probeTypes {
				if specs[t] == nil {
					continue
				}
				e.verdicts[t] = &verdict{result: initialResult(t)}
				if terminating && t != Readiness {
					// Upstream's quiet shutdown: liveness and startup stand
					// at success and stop.
					e.verdicts[t].result = Success
					specs[t] = nil
				}
			}
			e.probes = containerProbes(pod, c, st, podIP, specs)
		}
		out[st.ID] = e
	}
	return out
}

// probedContainers are the containers whose probes run: the pod's
// containers and its sidecars.
func probedContainers(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	for i, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			out = append(out, &pod.Spec.InitContainers[i])
		}
	}
	return out
}

// podIP is the host probes reach by default: the sandbox's primary
// address, or the node's for a pod on the host's network, as upstream's
// status.PodIP.
func podIP(pod *v1.Pod, runtime *container.PodStatus, nodeIPs []string) string {
	if ips := runtime.IPs(); len(ips) > 0 {
		return ips[0]
	}
	if pod.Spec.HostNetwork && len(nodeIPs) > 0 {
		return nodeIPs[0]
	}
	return ""
}

// containerProbes is what the plugin needs to probe one container
// instance; nil when it has no probe to run.
func containerProbes(pod *v1.Pod, c *v1.Container, st *container.ContainerStatus, podIP string, specs [len(probeTypes)]*v1.Probe) *probesv1.ContainerProbes {
	if specs[Liveness] == nil && specs[Readiness] == nil && specs[Startup] == nil {
		return nil
	}
	out := &probesv1.ContainerProbes{
		PodUid:        string(pod.UID),
		PodNamespace:  pod.Namespace,
		PodName:       pod.Name,
		ContainerName: c.Name,
		ContainerId:   st.ID,
		PodIp:         podIP,
		Liveness:      wireProbe(specs[Liveness], c.Env),
		Readiness:     wireProbe(specs[Readiness], c.Env),
		Startup:       wireProbe(specs[Startup], c.Env),
	}
	for _, p := range c.Ports {
		out.Ports = append(out.Ports, &typesv1.ContainerPort{Name: p.Name, ContainerPort: p.ContainerPort, Protocol: string(p.Protocol)})
	}
	if !st.StartedAt.IsZero() {
		out.StartedAt = timestamppb.New(st.StartedAt)
	}
	return out
}

// wireProbe is p on the wire. An exec probe's command has $(VAR)
// references to the container's static env values expanded, as upstream's
// ExpandContainerCommandOnlyStatic does: it sees neither valueFrom nor the
// downward API.
func wireProbe(p *v1.Probe, env []v1.EnvVar) *probesv1.Probe {
	if p == nil {
		return nil
	}
	out := &probesv1.Probe{
		InitialDelaySeconds:           p.InitialDelaySeconds,
		TimeoutSeconds:                p.TimeoutSeconds,
		PeriodSeconds:                 p.PeriodSeconds,
		SuccessThreshold:              p.SuccessThreshold,
		FailureThreshold:              p.FailureThreshold,
		TerminationGracePeriodSeconds: p.TerminationGracePeriodSeconds,
	}
	switch h := p.ProbeHandler; {
	case h.Exec != nil:
		out.Handler = &probesv1.Probe_Exec{Exec: &probesv1.ExecAction{Command: podspec.ExpandStatic(h.Exec.Command, env)}}
	case h.HTTPGet != nil:
		a := &probesv1.HTTPGetAction{Path: h.HTTPGet.Path, Host: h.HTTPGet.Host, Scheme: string(h.HTTPGet.Scheme)}
		a.Port, a.PortName = wirePort(h.HTTPGet.Port)
		for _, header := range h.HTTPGet.HTTPHeaders {
			a.Headers = append(a.Headers, &probesv1.HTTPHeader{Name: header.Name, Value: header.Value})
		}
		out.Handler = &probesv1.Probe_HttpGet{HttpGet: a}
	case h.TCPSocket != nil:
		a := &probesv1.TCPSocketAction{Host: h.TCPSocket.Host}
		a.Port, a.PortName = wirePort(h.TCPSocket.Port)
		out.Handler = &probesv1.Probe_TcpSocket{TcpSocket: a}
	case h.GRPC != nil:
		out.Handler = &probesv1.Probe_Grpc{Grpc: &probesv1.GRPCAction{Port: h.GRPC.Port, Service: h.GRPC.Service}}
	}
	return out
}

// wirePort is a port by number or by name; the plugin resolves names
// against the container's ports.
func wirePort(port intstr.IntOrString) (int32, string) {
	if port.Type == intstr.String {
		return 0, port.StrVal
	}
	return port.IntVal, ""
}
