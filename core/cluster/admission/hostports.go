package admission

import (
	v1 "k8s.io/api/core/v1"
)

// bindAll is the host IP a port without one binds.
const bindAll = "0.0.0.0"

// hostPort is one (ip, protocol, port) a pod binds on the node.
type hostPort struct {
	ip       string
	protocol v1.Protocol
	port     int32
}

// hostPorts are the host ports a pod binds for its whole life, as the
// scheduler's GetHostPorts: its containers' and its sidecars' (restartable
// init containers), with upstream's defaults for IP and protocol.
func hostPorts(pod *v1.Pod) []hostPort {
	var out []hostPort
	add := func(c *v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			hp := hostPort{ip: p.HostIP, protocol: p.Protocol, port: p.HostPort}
			if hp.ip == "" {
				hp.ip = bindAll
			}
			if hp.protocol == "" {
				hp.protocol = v1.ProtocolTCP
			}
			out = append(out, hp)
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}

// hostPortsConflict is the NodePorts predicate: a port the pod wants is
// bound by another pod on the same IP, or either binds all IPs.
func hostPortsConflict(pod *v1.Pod, others []*v1.Pod) bool {
	wanted := hostPorts(pod)
	if len(wanted) == 0 {
		return false
	}
	for _, other := range others {
		for _, used := range hostPorts(other) {
			for _, want := range wanted {
				if want.protocol == used.protocol && want.port == used.port &&
					(want.ip == used.ip || want.ip == bindAll || used.ip == bindAll) {
					return true
				}
			}
		}
	}
	return false
}
