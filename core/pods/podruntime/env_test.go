package podruntime

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func fieldRef(path string) *v1.EnvVarSource {
	return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
}

func resourceRef(container, res, divisor string) *v1.EnvVarSource {
	s := &v1.ResourceFieldSelector{ContainerName: container, Resource: res}
	if divisor != "" {
		s.Divisor = resource.MustParse(divisor)
	}
	return &v1.EnvVarSource{ResourceFieldRef: s}
}

func cmKey(name, key string, optional *bool) *v1.EnvVarSource {
	return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}
}

func secretKey(name, key string, optional *bool) *v1.EnvVarSource {
	return &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}
}

// envTestSources are the configMaps and secrets of the env tests.
var envTestSources = &fakeSources{
	configMaps: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"color": "blue"}}},
	secrets:    map[string]*v1.Secret{"sec": {Data: map[string][]byte{"pass": []byte("p4ss"), "user": []byte("u")}}},
}

func TestContainerEnv(t *testing.T) {
	pod := testPod(func(p *v1.Pod) {
		p.Labels = map[string]string{"app": "web", "tier": "front"}
		p.Annotations = map[string]string{"owner": "team-a"}
		p.Spec.ServiceAccountName = "robot"
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("128Mi"), "hugepages-2Mi": resource.MustParse("4Mi")},
		}
		p.Spec.Containers[1].Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m")}
	})
	ec := envContext{
		nodeName:    "node-1",
		nodeIPs:     mustIPs(t, "192.0.2.10", "2001:db8::10"),
		podIPs:      []string{"fd00::5", "10.88.0.5"},
		allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")},
		sources:     envTestSources,
	}
	for _, tc := range []struct {
		name string
		env  []v1.EnvVar
		from []v1.EnvFromSource
		ec   func(*envContext)
		want []envVar
	}{
		{name: "plain and expanded values", env: []v1.EnvVar{
			{Name: "A", Value: "x"}, {Name: "B", Value: "$(A)-$(C)-$$(A)"}, {Name: "C", Value: "z"}, {Name: "EMPTY"},
		}, want: []envVar{{"A", "x"}, {"B", "x-$(C)-$(A)"}, {"C", "z"}, {"EMPTY", ""}}},
		{name: "a later declaration wins in place", env: []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}, {Name: "A", Value: "3"}},
			want: []envVar{{"A", "3"}, {"B", "2"}}},
		{name: "pod fields", env: []v1.EnvVar{
			{Name: "NAME", ValueFrom: fieldRef("metadata.name")},
			{Name: "NS", ValueFrom: fieldRef("metadata.namespace")},
			{Name: "UID", ValueFrom: fieldRef("metadata.uid")},
			{Name: "APP", ValueFrom: fieldRef("metadata.labels['app']")},
			{Name: "OWNER", ValueFrom: fieldRef("metadata.annotations['owner']")},
			{Name: "LABELS", ValueFrom: fieldRef("metadata.labels")},
			{Name: "NODE", ValueFrom: fieldRef("spec.nodeName")},
			{Name: "SA", ValueFrom: fieldRef("spec.serviceAccountName")},
		}, want: []envVar{
			{"NAME", "web"}, {"NS", "default"}, {"UID", "uid-1"}, {"APP", "web"}, {"OWNER", "team-a"},
			{"LABELS", "app=\"web\"\ntier=\"front\""}, {"NODE", "node-1"}, {"SA", "robot"},
		}},
		{name: "addresses, pod IPs in the node's family order", env: []v1.EnvVar{
			{Name: "HOST_IP", ValueFrom: fieldRef("status.hostIP")},
			{Name: "HOST_IPS", ValueFrom: fieldRef("status.hostIPs")},
			{Name: "POD_IP", ValueFrom: fieldRef("status.podIP")},
			{Name: "POD_IPS", ValueFrom: fieldRef("status.podIPs")},
		}, want: []envVar{
			{"HOST_IP", "192.0.2.10"}, {"HOST_IPS", "192.0.2.10,2001:db8::10"}, {"POD_IP", "10.88.0.5"}, {"POD_IPS", "10.88.0.5,fd00::5"},
		}},
		{name: "no pod IP yet", env: []v1.EnvVar{{Name: "POD_IP", ValueFrom: fieldRef("status.podIP")}},
			ec: func(e *envContext) { e.podIPs = nil }, want: []envVar{{"POD_IP", ""}}},
		{name: "resources", env: []v1.EnvVar{
			{Name: "CPU_REQ_MILLI", ValueFrom: resourceRef("", "requests.cpu", "1m")},
			{Name: "CPU_REQ", ValueFrom: resourceRef("", "requests.cpu", "")},
			{Name: "MEM_LIMIT_MI", ValueFrom: resourceRef("", "limits.memory", "1Mi")},
			{Name: "CPU_LIMIT_DEFAULTED", ValueFrom: resourceRef("", "limits.cpu", "")},
			{Name: "OTHER_CPU_LIMIT", ValueFrom: resourceRef("b", "limits.cpu", "")},
			{Name: "OTHER_MEM_LIMIT_DEFAULTED", ValueFrom: resourceRef("b", "limits.memory", "1Gi")},
			{Name: "HUGEPAGES", ValueFrom: resourceRef("", "limits.hugepages-2Mi", "1Mi")},
		}, want: []envVar{
			{"CPU_REQ_MILLI", "250"}, {"CPU_REQ", "1"}, {"MEM_LIMIT_MI", "128"}, {"CPU_LIMIT_DEFAULTED", "4"},
			{"OTHER_CPU_LIMIT", "2"}, {"OTHER_MEM_LIMIT_DEFAULTED", "8"}, {"HUGEPAGES", "4"},
		}},
		{name: "configMap and secret keys, optional ones missing skipped", env: []v1.EnvVar{
			{Name: "CM", ValueFrom: cmKey("cfg", "color", nil)},
			{Name: "S", ValueFrom: secretKey("sec", "pass", nil)},
			{Name: "NO_CM", ValueFrom: cmKey("ghost", "k", ptr(true))},
			{Name: "NO_KEY", ValueFrom: secretKey("sec", "ghost", ptr(true))},
			{Name: "KEPT", Value: "$(CM)/$(S)"},
		}, want: []envVar{{"CM", "blue"}, {"S", "p4ss"}, {"KEPT", "blue/p4ss"}}},
		{name: "envFrom with prefix, env wins in place", env: []v1.EnvVar{{Name: "user", Value: "$(CFG_color)-L"}},
			from: []v1.EnvFromSource{
				{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
				{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}}},
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "ghost"}, Optional: ptr(true)}},
			},
			want: []envVar{{"CFG_color", "blue"}, {"pass", "p4ss"}, {"user", "blue-L"}}},
		{name: "service variables after the container's, which win and expand them", env: []v1.EnvVar{
			{Name: "API", Value: "$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"}, {Name: "KUBERNETES_PORT", Value: "mine"},
		}, ec: func(e *envContext) {
			e.serviceEnv = map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_PORT": "tcp://10.0.0.1:443"}
		}, want: []envVar{{"API", "10.0.0.1:443"}, {"KUBERNETES_PORT", "mine"}, {"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}},
		{name: "device variables first, the container's win", env: []v1.EnvVar{{Name: "MODE", Value: "mine"}},
			ec:   func(e *envContext) { e.deviceEnvs = map[string]string{"Z_DEV": "z", "MODE": "device", "A_DEV": "a"} },
			want: []envVar{{"A_DEV", "a"}, {"Z_DEV", "z"}, {"MODE", "mine"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod.DeepCopy()
			p.Spec.Containers[0].Env = tc.env
			p.Spec.Containers[0].EnvFrom = tc.from
			e := ec
			if tc.ec != nil {
				tc.ec(&e)
			}
			got, err := containerEnv(context.Background(), p, &p.Spec.Containers[0], e)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("containerEnv (-want +got):\n%s", diff)
			}
		})
	}
}

func TestContainerEnvErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		c       v1.Container
		ec      envContext
		wantErr string
	}{
		{name: "configMap envFrom on a standalone node", c: v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}},
			wantErr: "couldn't get configMap default/cfg, no kubeClient defined"},
		{name: "optional secret key on a standalone node", c: v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: secretKey("sec", "k", ptr(true))}}},
			wantErr: "couldn't get secret default/sec, no kubeClient defined"},
		{name: "missing configMap", c: v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: cmKey("ghost", "k", nil)}}},
			ec: envContext{sources: envTestSources}, wantErr: `configmaps "ghost" not found`},
		{name: "missing secret envFrom", c: v1.Container{EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "ghost"}}}}},
			ec: envContext{sources: envTestSources}, wantErr: `secrets "ghost" not found`},
		{name: "missing configMap key", c: v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: cmKey("cfg", "ghost", nil)}}},
			ec: envContext{sources: envTestSources}, wantErr: "couldn't find key ghost in ConfigMap default/cfg"},
		{name: "missing secret key", c: v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: secretKey("sec", "ghost", ptr(false))}}},
			ec: envContext{sources: envTestSources}, wantErr: "couldn't find key ghost in Secret default/sec"},
		{name: "optional envFrom does not make a later key optional", c: v1.Container{
			EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "ghost"}, Optional: ptr(true)}}},
			Env:     []v1.EnvVar{{Name: "X", ValueFrom: cmKey("ghost", "k", nil)}}},
			ec: envContext{sources: envTestSources}, wantErr: `configmaps "ghost" not found`},
		{name: "host IP unknown", c: v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: fieldRef("status.hostIP")}}},
			wantErr: "the node's IP addresses are not known"},
		{name: "unsupported field", c: v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: fieldRef("spec.schedulerName")}}},
			wantErr: "unsupported fieldPath: spec.schedulerName"},
		{name: "subscript on a field without", c: v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: fieldRef("metadata.name['x']")}}},
			wantErr: `fieldPath "metadata.name['x']" does not support subscript`},
		{name: "bad label key", c: v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: fieldRef("metadata.labels['-bad-']")}}},
			wantErr: "invalid key subscript in metadata.labels['-bad-']"},
		{name: "API version", c: v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}}}}},
			wantErr: "unsupported pod version: v2"},
		{name: "unknown resource", c: v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: resourceRef("", "limits.gpu", "")}}},
			wantErr: `unsupported container resource "limits.gpu"`},
		{name: "resource of an unknown container", c: v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: resourceRef("ghost", "limits.cpu", "")}}},
			wantErr: "container ghost not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod()
			_, err := containerEnv(context.Background(), pod, &tc.c, tc.ec)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("containerEnv error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
