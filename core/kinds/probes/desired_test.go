package probes

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/microlet/microlet/core/pods/podspec"
	"github.com/microlet/microlet/core/runtime/container"
	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// The wire form of a pod's probes, with the API defaults podspec applies.
func TestDesiredContainers(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	grace := int64(5)
	service := "health"
	app := v1.Container{
		Name: "app", Image: "app",
		Ports:          []v1.ContainerPort{{Name: "web", ContainerPort: 8080}},
		Env:            []v1.EnvVar{{Name: "FILE", Value: "/tmp/alive"}},
		ReadinessProbe: httpReadiness(),
		LivenessProbe: &v1.Probe{
			ProbeHandler:                  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "$(FILE)"}}},
			TerminationGracePeriodSeconds: &grace,
		},
		StartupProbe: &v1.Probe{
			ProbeHandler:     v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(8080), Host: "127.0.0.1"}},
			FailureThreshold: 30, PeriodSeconds: 2, InitialDelaySeconds: 3,
		},
	}
	pod := newPod("1", app, v1.Container{Name: "idle", Image: "idle"}, v1.Container{Name: "stopped", Image: "s", ReadinessProbe: httpReadiness()})
	pod.Spec.InitContainers = []v1.Container{
		{Name: "proxy", Image: "p", RestartPolicy: &always, ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9090, Service: &service}}}},
		{Name: "setup", Image: "s"},
	}
	podspec.SetDefaults(pod)
	runtime := runtimeOf(pod, "app", "idle", "proxy", "setup")
	runtime.Containers = append(runtime.Containers, &container.ContainerStatus{ID: "stopped-1", Name: "stopped", State: container.StateExited})

	defaults := func(p *probesv1.Probe) *probesv1.Probe {
		p.TimeoutSeconds, p.SuccessThreshold = 1, 1
		if p.PeriodSeconds == 0 {
			p.PeriodSeconds = 10
		}
		if p.FailureThreshold == 0 {
			p.FailureThreshold = 3
		}
		return p
	}
	target := func(name string) *probesv1.ContainerProbes {
		return &probesv1.ContainerProbes{
			PodUid: "uid-1", PodNamespace: "default", PodName: "web", ContainerName: name, ContainerId: name + "-1",
			PodIp: "10.88.0.5", StartedAt: timestamppb.New(containerStart),
		}
	}
	wantApp := target("app")
	wantApp.Ports = []*typesv1.ContainerPort{{Name: "web", ContainerPort: 8080, Protocol: "TCP"}}
	wantApp.Readiness = defaults(&probesv1.Probe{Handler: &probesv1.Probe_HttpGet{HttpGet: &probesv1.HTTPGetAction{Path: "/ready", PortName: "web", Scheme: "HTTP"}}})
	wantApp.Liveness = defaults(&probesv1.Probe{Handler: &probesv1.Probe_Exec{Exec: &probesv1.ExecAction{Command: []string{"cat", "/tmp/alive"}}}, TerminationGracePeriodSeconds: &grace})
	wantApp.Startup = defaults(&probesv1.Probe{Handler: &probesv1.Probe_TcpSocket{TcpSocket: &probesv1.TCPSocketAction{Port: 8080, Host: "127.0.0.1"}},
		FailureThreshold: 30, PeriodSeconds: 2, InitialDelaySeconds: 3})
	wantProxy := target("proxy")
	wantProxy.Readiness = defaults(&probesv1.Probe{Handler: &probesv1.Probe_Grpc{Grpc: &probesv1.GRPCAction{Port: 9090, Service: &service}}})

	got := desiredContainers(pod, runtime, nil, true)
	if len(got) != 3 {
		t.Errorf("desired instances %v; want app-1, idle-1 and proxy-1: running containers and sidecars", keys(got))
	}
	for id, want := range map[string]*probesv1.ContainerProbes{"app-1": wantApp, "idle-1": nil, "proxy-1": wantProxy} {
		e := got[id]
		if e == nil {
			t.Errorf("%s missing", id)
			continue
		}
		if !proto.Equal(e.probes, want) {
			t.Errorf("%s probes =\n  %v\nwant\n  %v", id, e.probes, want)
		}
	}
	if v := got["app-1"].verdicts; v[Liveness].result != Success || v[Readiness].result != Failure || v[Startup].result != Unknown {
		t.Errorf("app's initial verdicts %v/%v/%v; want liveness Success, readiness Failure, startup Unknown", v[Liveness], v[Readiness], v[Startup])
	}

	t.Run("without a plugin", func(t *testing.T) {
		for id, e := range desiredContainers(pod, runtime, nil, false) {
			if e.probes != nil || e.verdicts != [len(probeTypes)]*verdict{} {
				t.Errorf("%s has probes %v, verdicts %v; want none without a plugin", id, e.probes, e.verdicts)
			}
		}
	})

	t.Run("a pod on the host's network is probed on the node's address", func(t *testing.T) {
		host := pod.DeepCopy()
		host.Spec.HostNetwork = true
		rt := runtimeOf(host, "app")
		rt.Sandboxes[0].IPs = nil
		if ip := desiredContainers(host, rt, []string{"192.168.1.10", "fd00::10"}, true)["app-1"].probes.GetPodIp(); ip != "192.168.1.10" {
			t.Errorf("pod IP %q, want the node's first address", ip)
		}
	})

	t.Run("a pod being deleted keeps readiness only", func(t *testing.T) {
		deleted := pod.DeepCopy()
		deleted.DeletionTimestamp = &metav1.Time{Time: containerStart}
		e := desiredContainers(deleted, runtime, nil, true)["app-1"]
		if e.probes.GetLiveness() != nil || e.probes.GetStartup() != nil || e.probes.GetReadiness() == nil {
			t.Errorf("probes of a deleted pod %v; want readiness only", e.probes)
		}
		if e.verdicts[Liveness].result != Success || e.verdicts[Startup].result != Success {
			t.Errorf("liveness %v, startup %v; want both Success: upstream's quiet shutdown", e.verdicts[Liveness], e.verdicts[Startup])
		}
	})
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
