package podspec

import (
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestSetDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   v1.PodSpec
		want v1.PodSpec
	}{
		{
			name: "minimal pod",
			in:   v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1.36"}}},
			want: withSpecDefaults(v1.PodSpec{Containers: []v1.Container{withContainerDefaults(v1.Container{Name: "c", Image: "busybox:1.36"}, v1.PullIfNotPresent)}}),
		},
		{
			name: "explicit values are kept",
			in: v1.PodSpec{
				RestartPolicy:                 v1.RestartPolicyNever,
				DNSPolicy:                     v1.DNSDefault,
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				SchedulerName:                 "other",
				EnableServiceLinks:            ptr.To(false),
				SecurityContext:               &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
				Containers: []v1.Container{{
					Name: "c", Image: "busybox", ImagePullPolicy: v1.PullNever,
					TerminationMessagePath: "/tmp/msg", TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
				}},
			},
			want: v1.PodSpec{
				RestartPolicy:                 v1.RestartPolicyNever,
				DNSPolicy:                     v1.DNSDefault,
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				SchedulerName:                 "other",
				EnableServiceLinks:            ptr.To(false),
				SecurityContext:               &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
				Containers: []v1.Container{{
					Name: "c", Image: "busybox", ImagePullPolicy: v1.PullNever,
					TerminationMessagePath: "/tmp/msg", TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
				}},
			},
		},
		{
			name: "requests default to limits for init and regular containers",
			in: v1.PodSpec{
				InitContainers: []v1.Container{{Name: "i", Image: "x:1", Resources: v1.ResourceRequirements{
					Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
				}}},
				Containers: []v1.Container{{Name: "c", Image: "x:1", Resources: v1.ResourceRequirements{
					Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")},
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100u")},
				}}},
			},
			want: withSpecDefaults(v1.PodSpec{
				InitContainers: []v1.Container{withContainerDefaults(v1.Container{Name: "i", Image: "x:1", Resources: v1.ResourceRequirements{
					Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
				}}, v1.PullIfNotPresent)},
				Containers: []v1.Container{withContainerDefaults(v1.Container{Name: "c", Image: "x:1", Resources: v1.ResourceRequirements{
					Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")},
					// 100u rounds up to milli scale.
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1m"), v1.ResourceMemory: resource.MustParse("1Gi")},
				}}, v1.PullIfNotPresent)},
			}),
		},
		{
			name: "host network ports and port protocol",
			in: v1.PodSpec{HostNetwork: true, Containers: []v1.Container{{Name: "c", Image: "x:1", Ports: []v1.ContainerPort{
				{ContainerPort: 80}, {ContainerPort: 53, HostPort: 5353, Protocol: v1.ProtocolUDP},
			}}}},
			want: withSpecDefaults(v1.PodSpec{HostNetwork: true, Containers: []v1.Container{withContainerDefaults(v1.Container{Name: "c", Image: "x:1", Ports: []v1.ContainerPort{
				{ContainerPort: 80, HostPort: 80, Protocol: v1.ProtocolTCP}, {ContainerPort: 53, HostPort: 5353, Protocol: v1.ProtocolUDP},
			}}, v1.PullIfNotPresent)}}),
		},
		{
			name: "probes and lifecycle handlers",
			in: v1.PodSpec{Containers: []v1.Container{{
				Name: "c", Image: "x:1",
				LivenessProbe:  &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(8080)}}},
				ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9090}}, PeriodSeconds: 3},
				Lifecycle:      &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http")}}},
			}}},
			want: withSpecDefaults(v1.PodSpec{Containers: []v1.Container{withContainerDefaults(v1.Container{
				Name: "c", Image: "x:1",
				LivenessProbe: &v1.Probe{
					ProbeHandler:   v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(8080), Path: "/", Scheme: v1.URISchemeHTTP}},
					TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
				},
				ReadinessProbe: &v1.Probe{
					ProbeHandler:   v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9090, Service: ptr.To("")}},
					TimeoutSeconds: 1, PeriodSeconds: 3, SuccessThreshold: 1, FailureThreshold: 3,
				},
				Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http"), Path: "/", Scheme: v1.URISchemeHTTP}}},
			}, v1.PullIfNotPresent)}}),
		},
		{
			name: "volumes",
			in: v1.PodSpec{
				Volumes: []v1.Volume{
					{Name: "scratch"},
					{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/log"}}},
					{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
						{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
					}}}},
				},
				Containers: []v1.Container{{Name: "c", Image: "x:1"}},
			},
			want: withSpecDefaults(v1.PodSpec{
				Volumes: []v1.Volume{
					{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
					{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/log", Type: ptr.To(v1.HostPathUnset)}}},
					{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
						DefaultMode: ptr.To(v1.DownwardAPIVolumeSourceDefaultMode),
						Items: []v1.DownwardAPIVolumeFile{
							{Path: "name", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}},
						},
					}}},
				},
				Containers: []v1.Container{withContainerDefaults(v1.Container{Name: "c", Image: "x:1"}, v1.PullIfNotPresent)},
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: tt.in}
			SetDefaults(pod)
			if !equality.Semantic.DeepEqual(pod.Spec, tt.want) {
				t.Errorf("spec\n%s\nwant\n%s", toJSON(pod.Spec), toJSON(tt.want))
			}
		})
	}
}

func TestImagePullPolicyDefault(t *testing.T) {
	tests := []struct {
		image string
		want  v1.PullPolicy
	}{
		{"busybox", v1.PullAlways},
		{"busybox:latest", v1.PullAlways},
		{"busybox:1.36", v1.PullIfNotPresent},
		{"localhost:5000/busybox", v1.PullAlways},
		{"localhost:5000/busybox:1", v1.PullIfNotPresent},
		{"busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", v1.PullIfNotPresent},
		{"busybox:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", v1.PullAlways},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{
				InitContainers: []v1.Container{{Name: "i", Image: tt.image}},
				Containers:     []v1.Container{{Name: "c", Image: tt.image}},
			}}
			SetDefaults(pod)
			for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
				if c.ImagePullPolicy != tt.want {
					t.Errorf("%s: imagePullPolicy %s; want %s", c.Name, c.ImagePullPolicy, tt.want)
				}
			}
		})
	}
}

func withSpecDefaults(spec v1.PodSpec) v1.PodSpec {
	spec.RestartPolicy = v1.RestartPolicyAlways
	spec.DNSPolicy = v1.DNSClusterFirst
	spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	spec.SchedulerName = "default-scheduler"
	spec.EnableServiceLinks = ptr.To(true)
	spec.SecurityContext = &v1.PodSecurityContext{}
	return spec
}

func withContainerDefaults(c v1.Container, pull v1.PullPolicy) v1.Container {
	c.ImagePullPolicy = pull
	c.TerminationMessagePath = "/dev/termination-log"
	c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	return c
}

func toJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
