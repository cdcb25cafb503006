package admission

import (
	"context"
	"runtime"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/pods/podspec"
)

func apiPod(mutate ...func(*v1.Pod)) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u1",
			Annotations: map[string]string{podspec.ConfigSourceAnnotationKey: "api"}},
		Spec: v1.PodSpec{NodeName: "node-a", Containers: []v1.Container{{Name: "c", Image: "i"}}},
	}
	for _, m := range mutate {
		m(pod)
	}
	return pod
}

func withHostPort(ip string, port int32) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: port, HostPort: port, HostIP: ip})
	}
}

func TestCheck(t *testing.T) {
	node := InitialNode("node-a", map[string]string{"zone": "z1"}, []v1.Taint{{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoExecute}})
	tolerate := func(p *v1.Pod) {
		p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
	}
	static := func(p *v1.Pod) { p.Annotations[podspec.ConfigSourceAnnotationKey] = "file" }
	otherOS := "windows"
	if runtime.GOOS == otherOS {
		otherOS = "linux"
	}
	tests := []struct {
		name   string
		pod    *v1.Pod
		others []*v1.Pod
		reason string
		msg    string
	}{
		{name: "fits", pod: apiPod(tolerate)},
		{name: "NoExecute taint not tolerated", pod: apiPod(), reason: "TaintToleration",
			msg: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
		{name: "static pods ignore taints", pod: apiPod(static)},
		{name: "other node", pod: apiPod(tolerate, func(p *v1.Pod) { p.Spec.NodeName = "node-b" }), reason: "NodeName",
			msg: "Predicate NodeName failed: node(s) didn't match the requested node name"},
		{name: "node selector matches", pod: apiPod(tolerate, func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "z1"} })},
		{name: "the beta OS label of the initial node matches", pod: apiPod(tolerate, func(p *v1.Pod) {
			p.Spec.NodeSelector = map[string]string{"beta.kubernetes.io/os": runtime.GOOS}
		})},
		{name: "node selector does not match", pod: apiPod(tolerate, func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "z2"} }),
			reason: "NodeAffinity", msg: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{name: "required affinity does not match", pod: apiPod(tolerate, func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"z9"}}}}},
			}}}
		}), reason: "NodeAffinity", msg: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{name: "OS label mismatch", pod: apiPod(tolerate, func(p *v1.Pod) { p.Labels = map[string]string{v1.LabelOSStable: otherOS} }),
			reason: "PodOSSelectorNodeLabelDoesNotMatch", msg: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
		{name: "OS field mismatch", pod: apiPod(tolerate, func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: v1.OSName(otherOS)} }),
			reason: "PodOSNotSupported", msg: "Failed to admit pod as the OS field doesn't match node OS"},
		{name: "host port taken", pod: apiPod(tolerate, withHostPort("", 8080)), others: []*v1.Pod{apiPod(withHostPort("10.0.0.1", 8080))},
			reason: "NodePorts", msg: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{name: "host port on other IPs", pod: apiPod(tolerate, withHostPort("10.0.0.2", 8080)), others: []*v1.Pod{apiPod(withHostPort("10.0.0.1", 8080))}},
		{name: "host port, other protocol", pod: apiPod(tolerate, withHostPort("", 53)), others: []*v1.Pod{apiPod(withHostPort("", 53), func(p *v1.Pod) {
			p.Spec.Containers[0].Ports[0].Protocol = v1.ProtocolUDP
		})}},
		{name: "unsupported volume", pod: apiPod(tolerate, func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
				{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}}},
				{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		}), reason: "UnsupportedVolume", msg: `volume "data": only emptyDir, hostPath, configMap, secret, downwardAPI and projected volumes are supported on this node`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Check(tt.pod, node, tt.others)
			if v.Reason != tt.reason || v.Message != tt.msg {
				t.Errorf("Check = %q %q, want %q %q", v.Reason, v.Message, tt.reason, tt.msg)
			}
		})
	}
}

func TestAdmitterUsesTheNodeOnceKnown(t *testing.T) {
	var known *v1.Node
	a := &Admitter{Node: func() *v1.Node { return known }, Initial: InitialNode("node-a", map[string]string{"pool": "e2e"}, nil)}
	pod := apiPod(func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"role": "edge"} })
	if got := a.Admit(context.Background(), pod, nil); got.Admit || got.Reason != "NodeAffinity" {
		t.Fatalf("before the Node is known: %+v, want NodeAffinity", got)
	}
	if got := a.Admit(context.Background(), apiPod(func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"pool": "e2e"} }), nil); !got.Admit {
		t.Fatalf("a selector on node_labels before the Node is known: %+v, want admitted", got)
	}
	known = InitialNode("node-a", map[string]string{"role": "edge"}, nil)
	if got := a.Admit(context.Background(), pod, nil); !got.Admit {
		t.Fatalf("with the Node's labels: %+v, want admitted", got)
	}
}
