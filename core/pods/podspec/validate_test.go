package podspec

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// validPod is a defaulted static pod that passes validation; each case
// breaks one thing.
func validPod() *v1.Pod {
	pod := &v1.Pod{Spec: v1.PodSpec{
		Volumes: []v1.Volume{
			{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/lib/data"}}},
			{Name: "scratch"},
		},
		InitContainers: []v1.Container{
			{Name: "setup", Image: "busybox:1", Command: []string{"true"}},
			{Name: "proxy", Image: "envoy:1", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways),
				ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(15000)}}}},
		},
		Containers: []v1.Container{{
			Name: "web", Image: "nginx:1",
			Ports:        []v1.ContainerPort{{Name: "http", ContainerPort: 80, HostPort: 8080}},
			VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "scratch", MountPath: "/tmp", SubPath: "web"}},
			Resources: v1.ResourceRequirements{
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), "example.com/gpu": resource.MustParse("1")},
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")},
			},
			LivenessProbe:  &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http")}}},
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"ready"}}}, SuccessThreshold: 2},
			Lifecycle:      &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}}},
		}},
	}}
	pod.Name = "web"
	SetDefaults(pod)
	ApplyStaticIdentity(pod, FileOrigin("node1", "/etc/manifests/web.yaml"))
	return pod
}

func TestValidateAcceptsValidPod(t *testing.T) {
	if errs := Validate(validPod()); len(errs) > 0 {
		t.Fatalf("valid pod rejected: %v", errs.ToAggregate())
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*v1.Pod)
		want   []string
	}{
		{
			name:   "pod name not a DNS subdomain",
			mutate: func(p *v1.Pod) { p.Name = "Web_1" },
			want:   []string{`metadata.name: Invalid value: "Web_1": a lowercase RFC 1123 subdomain must consist of`},
		},
		{
			name:   "namespace not a DNS label",
			mutate: func(p *v1.Pod) { p.Namespace = "kube.system" },
			want:   []string{`metadata.namespace: Invalid value: "kube.system": must not contain dots`},
		},
		{
			name:   "container name not a DNS label",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Name = "Web" },
			want:   []string{`spec.containers[0].name: Invalid value: "Web": a lowercase RFC 1123 label must consist of`},
		},
		{
			name:   "container name used by an init container",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Name = "setup" },
			want:   []string{`spec.containers[0].name: Duplicate value: "setup"`},
		},
		{
			name:   "no containers",
			mutate: func(p *v1.Pod) { p.Spec.Containers = nil },
			want:   []string{"spec.containers: Required value"},
		},
		{
			name:   "no image",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Image = "" },
			want:   []string{"spec.containers[0].image: Required value"},
		},
		{
			name:   "image with whitespace",
			mutate: func(p *v1.Pod) { p.Spec.InitContainers[0].Image = "busybox:1 " },
			want:   []string{`spec.initContainers[0].image: Invalid value: "busybox:1 ": must not have leading or trailing whitespace`},
		},
		{
			name:   "restart policy",
			mutate: func(p *v1.Pod) { p.Spec.RestartPolicy = "Sometimes" },
			want:   []string{`spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`},
		},
		{
			name: "init container restart policy other than Always",
			mutate: func(p *v1.Pod) {
				p.Spec.InitContainers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicy("OnFailure"))
			},
			want: []string{`spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": supported values: "Always"`},
		},
		{
			name:   "regular container restart policy",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways) },
			want:   []string{"spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers"},
		},
		{
			name: "probe on an init container that is not a sidecar",
			mutate: func(p *v1.Pod) {
				p.Spec.InitContainers[0].LivenessProbe = p.Spec.Containers[0].LivenessProbe
			},
			want: []string{"spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"},
		},
		{
			name: "ports",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Ports = []v1.ContainerPort{
					{Name: "http", ContainerPort: 0, Protocol: v1.ProtocolTCP},
					{Name: "http", ContainerPort: 70000, Protocol: "ICMP"},
					{Name: "Not_A_Name", ContainerPort: 81, HostPort: -1, Protocol: v1.ProtocolTCP},
				}
			},
			want: []string{
				"spec.containers[0].ports[0].containerPort: Required value",
				`spec.containers[0].ports[1].name: Duplicate value: "http"`,
				"spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
				`spec.containers[0].ports[1].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"`,
				`spec.containers[0].ports[2].name: Invalid value: "Not_A_Name": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
				"spec.containers[0].ports[2].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive",
			},
		},
		{
			name: "host port used twice",
			mutate: func(p *v1.Pod) {
				p.Spec.InitContainers[1].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP}}
			},
			want: []string{`spec.containers[0].ports[0].hostPort: Duplicate value: "8080/TCP"`},
		},
		{
			name: "volumes",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = append(p.Spec.Volumes,
					v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
					v1.Volume{Name: "both", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}, HostPath: &v1.HostPathVolumeSource{Path: "/x"}}},
					v1.Volume{Name: "rel", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "var/lib"}}},
					v1.Volume{Name: "up", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/../etc", Type: ptr.To(v1.HostPathType("Pipe"))}}},
					v1.Volume{Name: "none"},
				)
			},
			want: []string{
				`spec.volumes[2].name: Duplicate value: "data"`,
				"spec.volumes[3].emptyDir: Forbidden: may not specify more than 1 volume type",
				`spec.volumes[4].hostPath.path: Invalid value: "var/lib": must be an absolute path`,
				`spec.volumes[5].hostPath.path: Invalid value: "/var/../etc": must not contain '..'`,
				`spec.volumes[5].hostPath.type: Unsupported value: "Pipe": supported values: "", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"`,
				"spec.volumes[6]: Required value: must specify a volume type",
			},
		},
		{
			name: "volume mounts",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
					{Name: "cache", MountPath: "/cache"},
					{Name: "data", MountPath: "/cache"},
					{Name: "scratch", MountPath: "/s", SubPath: "/abs/../x"},
					{Name: "", MountPath: ""},
				}
			},
			want: []string{
				`spec.containers[0].volumeMounts[0].name: Not found: "cache"`,
				`spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/cache": must be unique`,
				`spec.containers[0].volumeMounts[2].subPath: Invalid value: "/abs/../x": must be a relative path`,
				`spec.containers[0].volumeMounts[2].subPath: Invalid value: "/abs/../x": must not contain '..'`,
				"spec.containers[0].volumeMounts[3].name: Required value",
				"spec.containers[0].volumeMounts[3].mountPath: Required value",
			},
		},
		{
			name: "requests above limits",
			mutate: func(p *v1.Pod) {
				r := &p.Spec.Containers[0].Resources
				r.Requests[v1.ResourceCPU] = resource.MustParse("2")
				r.Requests["example.com/gpu"] = resource.MustParse("0")
				r.Requests[v1.ResourceMemory] = resource.MustParse("-1")
			},
			want: []string{
				`spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`,
				`spec.containers[0].resources.requests: Invalid value: "0": must be equal to example.com/gpu limit of 1`,
				`spec.containers[0].resources.requests[memory]: Invalid value: "-1": must be greater than or equal to 0`,
			},
		},
		{
			name: "probe handlers",
			mutate: func(p *v1.Pod) {
				c := &p.Spec.Containers[0]
				c.LivenessProbe.Exec = &v1.ExecAction{}
				c.LivenessProbe.SuccessThreshold = 2
				c.StartupProbe = &v1.Probe{TimeoutSeconds: -1, SuccessThreshold: 1}
				c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{
					HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(0), Scheme: "FTP"},
				}, TerminationGracePeriodSeconds: ptr.To[int64](5)}
			},
			want: []string{
				"spec.containers[0].livenessProbe.exec.command: Required value",
				"spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type",
				"spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
				"spec.containers[0].startupProbe: Required value: must specify a handler type",
				"spec.containers[0].startupProbe.timeoutSeconds: Invalid value: -1: must be greater than or equal to 0",
				"spec.containers[0].readinessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive",
				`spec.containers[0].readinessProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"`,
				"spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes",
			},
		},
		{
			name: "lifecycle handlers",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{
					PostStart: &v1.LifecycleHandler{},
					PreStop:   &v1.LifecycleHandler{Exec: &v1.ExecAction{}, Sleep: &v1.SleepAction{Seconds: 60}},
				}
			},
			want: []string{
				"spec.containers[0].lifecycle.postStart: Required value: must specify a handler type",
				"spec.containers[0].lifecycle.preStop.exec.command: Required value",
				"spec.containers[0].lifecycle.preStop.sleep: Forbidden: may not specify more than 1 handler type",
			},
		},
		{
			name:   "sleep longer than the grace period",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Lifecycle.PreStop.Sleep.Seconds = 31 },
			want:   []string{"spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value: 31: must be non-negative and less than terminationGracePeriodSeconds (30)"},
		},
		{
			name:   "negative grace period",
			mutate: func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-1) },
			want: []string{
				"spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value: 5: must be non-negative and less than terminationGracePeriodSeconds (-1)",
				"spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0",
			},
		},
		{
			name:   "ephemeral containers",
			mutate: func(p *v1.Pod) { p.Spec.EphemeralContainers = []v1.EphemeralContainer{{}} },
			want:   []string{"spec.ephemeralContainers: Forbidden: cannot be set on create"},
		},
		{
			name: "references to API objects",
			mutate: func(p *v1.Pod) {
				p.Spec.ServiceAccountName = "default"
				p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "registry"}}
				p.Spec.Volumes[1].VolumeSource = v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "tls"}}
				p.Spec.Volumes = append(p.Spec.Volumes,
					v1.Volume{Name: "ceph", VolumeSource: v1.VolumeSource{CephFS: &v1.CephFSVolumeSource{Monitors: []string{"m"}, SecretRef: &v1.LocalObjectReference{Name: "ceph"}}}},
					v1.Volume{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
						{DownwardAPI: &v1.DownwardAPIProjection{}},
						{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
					}}}},
				)
				p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{Key: "p"}}}}
				p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{}}}
			},
			want: []string{
				"spec.serviceAccountName: Forbidden: static pods may not reference serviceaccounts",
				"spec.imagePullSecrets[0]: Forbidden: static pods may not reference secrets",
				"spec.volumes[1].secret: Forbidden: static pods may not reference secrets",
				"spec.volumes[2].cephfs.secretRef: Forbidden: static pods may not reference secrets",
				"spec.volumes[3].projected.sources[1].serviceAccountToken: Forbidden: static pods may not reference serviceaccounts",
				"spec.containers[0].env[0].valueFrom.secretKeyRef: Forbidden: static pods may not reference secrets",
				"spec.containers[0].envFrom[0].configMapRef: Forbidden: static pods may not reference configmaps",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkValidate(t, tt.mutate, tt.want)
		})
	}
}

func TestPrepareLocatesProblems(t *testing.T) {
	manifest := `apiVersion: v1
kind: PodList
items:
- metadata:
    name: good
  spec:
    containers:
    - name: c
      image: x:1
- metadata:
    name: bad
  spec:
    containers:
    - name: c
      ports:
      - containerPort: 0
- spec:
    containers:
    - name: c
      image: x:1
`
	m, err := DecodePodOrList([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	origin := URLOrigin("n1", "http://127.0.0.1/pods")
	if _, err := m.Prepare(0, origin); err != nil {
		t.Errorf("pod 0: %v", err)
	}
	_, err = m.Prepare(1, origin)
	want := "line 14: items[1].spec.containers[0].image: Required value; line 16: items[1].spec.containers[0].ports[0].containerPort: Required value"
	if err == nil || err.Error() != want {
		t.Errorf("pod 1: %v\nwant %s", err, want)
	}
	_, err = m.Prepare(2, origin)
	want = "line 17: items[2].metadata.name: Required value: a static pod needs a name"
	if err == nil || err.Error() != want {
		t.Errorf("pod 2: %v\nwant %s", err, want)
	}
	if m.Pods[1].Spec.RestartPolicy != "" {
		t.Errorf("Prepare changed the manifest's pod")
	}
}

// checkValidate validates validPod changed by mutate and checks that the
// errors start, in order, with want.
func checkValidate(t *testing.T, mutate func(*v1.Pod), want []string) {
	t.Helper()
	pod := validPod()
	mutate(pod)
	errs := Validate(pod)
	if len(errs) != len(want) {
		t.Fatalf("%d errors:\n%s\nwant %d:\n%s", len(errs), errorLines(errs.ToAggregate()), len(want), strings.Join(want, "\n"))
	}
	for i, e := range errs {
		if !strings.HasPrefix(e.Error(), want[i]) {
			t.Errorf("error %d:\n %s\nwant it to start with\n %s", i, e.Error(), want[i])
		}
	}
}

func errorLines(err error) string {
	if err == nil {
		return ""
	}
	return strings.ReplaceAll(err.Error(), ", ", "\n")
}
