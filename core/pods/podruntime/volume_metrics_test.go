package podruntime

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
)

func TestVolumeBook(t *testing.T) {
	b := newVolumeBook()
	pod := testPod(func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{
			{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
			{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/tmp"}}},
			{Name: "claim", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
		}
	})
	b.want(pod)
	start := time.Now()
	b.mount(pod, &pod.Spec.Volumes[0], start, nil)
	b.mount(pod, &pod.Spec.Volumes[1], start, errors.New("no such configMap"))
	b.mount(pod, &pod.Spec.Volumes[2], start, nil)
	if !b.mounted(pod.UID, "scratch") || b.mounted(pod.UID, "config") {
		t.Error("mounted: want scratch set up and config not")
	}
	// Upstream's plugin names; a kind no plugin serves is N/A.
	want := `
# HELP volume_manager_total_volumes [ALPHA] Number of volumes in Volume Manager
# TYPE volume_manager_total_volumes gauge
volume_manager_total_volumes{plugin_name="N/A",state="desired_state_of_world"} 1
volume_manager_total_volumes{plugin_name="kubernetes.io/configmap",state="desired_state_of_world"} 1
volume_manager_total_volumes{plugin_name="kubernetes.io/empty-dir",state="actual_state_of_world"} 1
volume_manager_total_volumes{plugin_name="kubernetes.io/empty-dir",state="desired_state_of_world"} 1
volume_manager_total_volumes{plugin_name="kubernetes.io/host-path",state="actual_state_of_world"} 1
volume_manager_total_volumes{plugin_name="kubernetes.io/host-path",state="desired_state_of_world"} 1
`
	if err := testutil.CollectAndCompare(b, strings.NewReader(want), "volume_manager_total_volumes"); err != nil {
		t.Error(err)
	}
	// Three mounts: two plugins succeeded, one failed.
	if n := testutil.CollectAndCount(b, "storage_operation_duration_seconds"); n != 3 {
		t.Errorf("%d storage_operation_duration_seconds series after three mounts, want 3", n)
	}

	b.unmount(pod.UID, time.Now(), errors.New("busy"))
	if !b.mounted(pod.UID, "scratch") {
		t.Error("a failed teardown forgot the pod's volumes")
	}
	b.unmount(pod.UID, time.Now(), nil)
	if n := testutil.CollectAndCount(b, "volume_manager_total_volumes"); n != 0 {
		t.Errorf("%d volume_manager_total_volumes series after the teardown, want none", n)
	}
	// volume_unmount for each plugin set up, failed once and then succeeded.
	if n := testutil.CollectAndCount(b, "storage_operation_duration_seconds"); n != 7 {
		t.Errorf("%d storage_operation_duration_seconds series after two teardowns, want 7", n)
	}
}
