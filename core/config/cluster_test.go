package config

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParseTaint(t *testing.T) {
	tests := []struct {
		in      string
		want    corev1.Taint
		wantErr bool
	}{
		{in: "dedicated=gpu:NoSchedule", want: corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
		{in: "example.com/maintenance:NoExecute", want: corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoExecute}},
		{in: "a=b:PreferNoSchedule", want: corev1.Taint{Key: "a", Value: "b", Effect: corev1.TaintEffectPreferNoSchedule}},
		{in: "no-effect", wantErr: true},
		{in: "a=b:Sometimes", wantErr: true},
		{in: "bad key!=b:NoSchedule", wantErr: true},
		{in: "=b:NoSchedule", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseTaint(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseTaint(%q) error = %v, want error %t", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && got != tt.want {
			t.Errorf("ParseTaint(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// TestClusterKeyErrors: what the kubelet would refuse of a cluster node's
// keys is refused here, naming the key.
func TestClusterKeyErrors(t *testing.T) {
	got, p := loadErrors(t, sources{main: `
node_labels = { "kubernetes.io/role" = "worker", "node.kubernetes.io/pool" = "a", "bad label!" = "x" }
register_with_taints = ["gpu=yes:NoSchedule", "oops"]
bootstrap_kubeconfig = "/etc/microlet/bootstrap.kubeconfig"
node_lease_duration_seconds = 0
kube_api_content_type = "application/yaml"
node_status_report_frequency = "1s"
`})
	want := []string{
		`{main}:2: node_labels: label "bad label!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		`{main}:2: node_labels: label "kubernetes.io/role" is in the kubernetes.io namespace and not one a node may set (allowed: beta.kubernetes.io/arch, beta.kubernetes.io/instance-type, beta.kubernetes.io/os, failure-domain.beta.kubernetes.io/region, failure-domain.beta.kubernetes.io/zone, kubernetes.io/arch, kubernetes.io/hostname, kubernetes.io/os, node.kubernetes.io/instance-type, topology.kubernetes.io/region, topology.kubernetes.io/zone and the prefixes kubelet.kubernetes.io, node.kubernetes.io)`,
		`{main}:3: register_with_taints: at index 1: expected "key[=value]:Effect", got "oops"`,
		`{main}:4: bootstrap_kubeconfig: needs kubeconfig: the path where the bootstrapped kubeconfig is written`,
		`{main}:5: node_lease_duration_seconds: expected a whole number of at least 1, got 0`,
		`{main}:6: kube_api_content_type: expected one of application/vnd.kubernetes.protobuf, application/json, got "application/yaml"`,
		`{main}:7: node_status_report_frequency: expected at least node_status_update_frequency (10s), got 1s`,
	}
	for i := range want {
		want[i] = p.expand(want[i])
	}
	slices.Sort(got)
	slices.Sort(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", lines(got), lines(want))
	}
}
