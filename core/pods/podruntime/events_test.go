package podruntime

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/cluster/events/eventstest"
)

// TestImageEvents: the image manager's events, with upstream's reasons and
// messages, against the container.
func TestImageEvents(t *testing.T) {
	const ref = " involvedObject{kind=Pod,apiVersion=v1}"
	for _, tc := range []struct {
		name    string
		image   string
		policy  v1.PullPolicy
		present bool
		pullErr error
		want    []string // regular expressions
	}{
		{name: "present", image: "localhost/busybox:1", policy: v1.PullIfNotPresent, present: true,
			want: []string{`^Normal Pulled Container image "localhost/busybox:1" already present on machine` + ref + `$`}},
		{name: "pulled", image: "localhost/app", policy: v1.PullIfNotPresent, want: []string{
			`^Normal Pulling Pulling image "localhost/app"` + ref + `$`,
			`^Normal Pulled Successfully pulled image "localhost/app" in \S+ \(\S+ including waiting\)\. Image size: 5242880 bytes\.` + ref + `$`,
		}},
		{name: "pull failed", image: "localhost/app:2", policy: v1.PullAlways, pullErr: errors.New("not found"), want: []string{
			`^Normal Pulling Pulling image "localhost/app:2"`,
			`^Warning Failed Failed to pull image "localhost/app:2": not found` + ref + `$`,
		}},
		{name: "never", image: "localhost/app:2", policy: v1.PullNever,
			want: []string{`^Warning ErrImageNeverPull Container image "localhost/app:2" is not present with pull policy of Never` + ref + `$`}},
		{name: "invalid name", image: "localhost/App:1", policy: v1.PullIfNotPresent,
			want: []string{`^Warning InspectFailed Failed to apply default image tag "localhost/App:1": `}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			images := &fakeImages{present: map[string]*runtimeapi.Image{}, pullErr: tc.pullErr}
			if tc.present {
				images.present[tc.image] = &runtimeapi.Image{Id: "sha256:present"}
			}
			p := newTestPuller(t, images, 0, newFakeClock())
			rec := record.NewFakeRecorder(10)
			rec.IncludeObject = true
			p.events = rec
			c := testContainer("a")
			c.Image, c.ImagePullPolicy = tc.image, tc.policy
			_, _ = p.ensureImage(context.Background(), testPod(), &c, nil)
			got := eventstest.Drain(rec)
			if len(got) != len(tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
			for i, want := range tc.want {
				if !regexp.MustCompile(want).MatchString(got[i]) {
					t.Errorf("event %q, want %q", got[i], want)
				}
			}
		})
	}
}

// TestImageBackOffEvent: a pull in backoff says so, without the last error.
func TestImageBackOffEvent(t *testing.T) {
	clock := newFakeClock()
	images := &fakeImages{present: map[string]*runtimeapi.Image{}, pullErr: errors.New("refused")}
	p := newTestPuller(t, images, 0, clock)
	rec := record.NewFakeRecorder(10)
	p.events = rec
	c := testContainer("a")
	_, _ = p.ensureImage(context.Background(), testPod(), &c, nil)
	eventstest.Drain(rec)
	clock.advance(5 * time.Second)
	_, _ = p.ensureImage(context.Background(), testPod(), &c, nil)
	if got := eventstest.Drain(rec); len(got) != 1 || got[0] != `Normal BackOff Back-off pulling image "localhost/busybox:1"` {
		t.Errorf("events in backoff %q", got)
	}
}

// TestFailedMountEvent: a volume that cannot be set up is upstream's
// FailedMount on the pod.
func TestFailedMountEvent(t *testing.T) {
	rec := record.NewFakeRecorder(1)
	m := newTestManager(t, func(o *Options) { o.Events = rec })
	dirType := v1.HostPathDirectory
	pod := testPod(func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/nonexistent-microlet", Type: &dirType}}}}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	})
	if _, err := m.volumes.containerMounts(pod, &pod.Spec.Containers[0], nil); err == nil {
		t.Fatal("a missing hostPath directory was set up")
	}
	want := `Warning FailedMount MountVolume.SetUp failed for volume "data" : hostPath type check failed: /nonexistent-microlet is not a directory`
	if got := eventstest.Drain(rec); len(got) != 1 || got[0] != want {
		t.Errorf("events %q, want %q", got, want)
	}
}

// TestDNSEvents: a ClusterFirst pod on a node without cluster DNS is
// upstream's MissingClusterDNS, on the node and on the pod; a DNS
// configuration cut to the limits is DNSConfigForming.
func TestDNSEvents(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	rec.IncludeObject = true
	d := &dnsConfigurer{log: hclog.NewNullLogger(), events: rec, nodeRef: events.NodeRef("node-1")}
	if _, err := d.podDNS(testPod()); err != nil {
		t.Fatal(err)
	}
	pod := testPod(func(p *v1.Pod) {
		p.Spec.DNSPolicy = v1.DNSNone
		p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"}}
	})
	if _, err := d.podDNS(pod); err != nil {
		t.Fatal(err)
	}
	const msg = `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`
	want := []string{
		"Warning MissingClusterDNS " + msg + " involvedObject{kind=Node,apiVersion=}",
		`Warning MissingClusterDNS pod: "web_default(uid-1)". ` + msg + " involvedObject{kind=,apiVersion=}",
		"Warning DNSConfigForming Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 192.0.2.1 192.0.2.2 192.0.2.3 involvedObject{kind=,apiVersion=}",
	}
	got := eventstest.Drain(rec)
	if len(got) != len(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %q, want %q", got[i], want[i])
		}
	}
}
