package podruntime

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestContainerAnnotationsRoundTrip(t *testing.T) {
	pod := testPod(func(p *v1.Pod) {
		p.DeletionGracePeriodSeconds = ptr(int64(7))
		c := &p.Spec.Containers[0]
		c.TerminationMessagePath = "/tmp/msg"
		c.TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
		c.Ports = []v1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP}}
		c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{
			Exec:    &v1.ExecAction{Command: []string{"/bin/stop", "now"}},
			HTTPGet: &v1.HTTPGetAction{Path: "/quit", Port: intstr.FromString("http")},
		}}
	})
	c := &pod.Spec.Containers[0]
	annotations, err := newContainerAnnotations(c, pod, 4, map[string]string{"device": "gpu0"})
	if err != nil {
		t.Fatal(err)
	}
	if annotations["device"] != "gpu0" {
		t.Errorf("device plugin annotation lost: %v", annotations)
	}
	got, err := containerFromAnnotations(annotations)
	if err != nil {
		t.Fatal(err)
	}
	want := annotatedContainer{
		Hash:                      containerHash(c),
		RestartCount:              4,
		PodDeletionGracePeriod:    ptr(int64(7)),
		PodTerminationGracePeriod: ptr(int64(30)),
		TerminationMessagePath:    "/tmp/msg",
		TerminationMessagePolicy:  v1.TerminationMessageFallbackToLogsOnError,
		PreStopHandler:            c.Lifecycle.PreStop,
		Ports:                     c.Ports,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("annotations read back (-want +got):\n%s", diff)
	}

	l := containerFromLabels(newContainerLabels(c, pod))
	if l != (labeledContainer{PodName: "web", PodNamespace: "default", PodUID: "uid-1", ContainerName: "a"}) {
		t.Errorf("labels read back: %+v", l)
	}
}

func TestContainerFromBadAnnotations(t *testing.T) {
	got, err := containerFromAnnotations(map[string]string{
		annotationContainerHash:                   "not-hex",
		annotationContainerRestartCount:           "3",
		annotationPodTerminationGracePeriod:       "soon",
		annotationContainerPreStopHandler:         "{",
		annotationContainerTerminationMessagePath: "/dev/termination-log",
	})
	if err == nil {
		t.Fatal("unparsable annotations gave no error")
	}
	for _, key := range []string{annotationContainerHash, annotationPodTerminationGracePeriod, annotationContainerPreStopHandler} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name %s", err, key)
		}
	}
	// What parses is kept.
	if got.RestartCount != 3 || got.TerminationMessagePath != "/dev/termination-log" || got.Hash != 0 || got.PreStopHandler != nil {
		t.Errorf("partially parsed annotations: %+v", got)
	}
}

func TestPodLabels(t *testing.T) {
	pod := testPod(func(p *v1.Pod) {
		p.Labels = map[string]string{"app": "web", "io.kubernetes.pod.name": "spoofed"}
	})
	got := newPodLabels(pod)
	want := map[string]string{"app": "web", "io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": "uid-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sandbox labels (-want +got):\n%s", diff)
	}
	if pod.Labels["io.kubernetes.pod.name"] != "spoofed" {
		t.Error("newPodLabels changed the pod's own labels")
	}
}

// TestContainerHashIsTheKubelets: the values the upstream kubelet v1.34.4
// put in io.kubernetes.container.hash for these containers (read with
// crictl by test/e2e/cluster's TestCrictlListsPods).
func TestContainerHashIsTheKubelets(t *testing.T) {
	for _, tc := range []struct {
		c    v1.Container
		want string
	}{
		{v1.Container{Name: "app", Image: "localhost/busybox:1", Command: []string{"sh"}}, "87103ce5"},
		{v1.Container{Name: "init", Image: "localhost/busybox:1"}, "935c2c99"},
	} {
		if got := strconv.FormatUint(containerHash(&tc.c), 16); got != tc.want {
			t.Errorf("containerHash(%s, %s) = %s, the kubelet's %s", tc.c.Name, tc.c.Image, got, tc.want)
		}
	}
}
