package podruntime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/microlet/microlet/core/cluster/events/eventstest"
)

// TestSetUpPodVolumes: configMaps on disk, secrets on a tmpfs, mounted
// read-only; a missing configMap fails the sync with FailedMount until the
// volume was set up once, after which the pod keeps its last files.
func TestSetUpPodVolumes(t *testing.T) {
	sources := &fakeSources{
		configMaps: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"k": "v1"}}},
		secrets:    map[string]*v1.Secret{"sec": {Data: map[string][]byte{"pass": []byte("p")}}},
	}
	rec := record.NewFakeRecorder(10)
	m := newTestManager(t, func(o *Options) { o.VolumeSources = sources; o.Events = rec })
	mounts := fakeMounts(m)
	pod := testPod(func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec"}}},
		}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}, {Name: "sec", MountPath: "/sec"}}
	})
	ctx := context.Background()
	before := sources.configMaps["cfg"]
	delete(sources.configMaps, "cfg")
	result := &SyncResult{}
	if m.mountVolumes(ctx, pod, result) {
		t.Fatal("mountVolumes succeeded without the configMap")
	}
	if len(result.Steps) != 1 || result.Steps[0].Reason != ReasonFailedMount ||
		!strings.Contains(result.Steps[0].Message, `MountVolume.SetUp failed for volume "cfg" : configmaps "cfg" not found`) {
		t.Fatalf("steps %+v, want FailedMount naming the volume", result.Steps)
	}
	if got := eventstest.Drain(rec); len(got) != 1 || got[0] != `Warning FailedMount MountVolume.SetUp failed for volume "cfg" : configmaps "cfg" not found` {
		t.Errorf("events %q, want upstream's FailedMount", got)
	}

	sources.configMaps["cfg"] = before
	if !m.mountVolumes(ctx, pod, &SyncResult{}) {
		t.Fatal("mountVolumes failed with every object there")
	}
	got, err := m.volumes.containerMounts(pod, &pod.Spec.Containers[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	cfgDir := m.volumes.projectedVolumePath(pod.UID, &pod.Spec.Volumes[0])
	secDir := m.volumes.projectedVolumePath(pod.UID, &pod.Spec.Volumes[1])
	if len(got) != 2 || got[0].HostPath != cfgDir || !got[0].Readonly || got[1].HostPath != secDir || !got[1].Readonly {
		t.Errorf("mounts %+v, want both volumes read-only", got)
	}
	if !strings.HasSuffix(cfgDir, "kubernetes.io~configmap/cfg") || !strings.HasSuffix(secDir, "kubernetes.io~secret/sec") {
		t.Errorf("volume directories %s, %s, want the kubelet's plugin directories", cfgDir, secDir)
	}
	if len(mounts.calls) != 1 || !strings.HasPrefix(mounts.calls[0], "tmpfs tmpfs "+secDir) {
		t.Errorf("mounts %v, want one tmpfs, for the secret", mounts.calls)
	}
	// An update reaches the file; a deleted configMap keeps the last one.
	sources.configMaps["cfg"] = &v1.ConfigMap{Data: map[string]string{"k": "v2"}}
	if !m.mountVolumes(ctx, pod, &SyncResult{}) {
		t.Fatal("mountVolumes failed on an update")
	}
	delete(sources.configMaps, "cfg")
	if !m.mountVolumes(ctx, pod, &SyncResult{}) {
		t.Error("a pod whose volumes were set up stopped syncing when its configMap went")
	}
	if data, err := os.ReadFile(filepath.Join(cfgDir, "k")); err != nil || string(data) != "v2" {
		t.Errorf("k = %q, %v; want the update v2", data, err)
	}
}

// TestProjectedVolumesStandalone: without an API server, a downwardAPI
// volume is written; a container mounting a secret fails saying why.
func TestProjectedVolumesStandalone(t *testing.T) {
	m := newTestManager(t)
	fakeMounts(m)
	pod := testPod(func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{
			{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec"}}},
			{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
				Items: []v1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
		}
		p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "info", MountPath: "/info"}}
		p.Spec.Containers[1].VolumeMounts = []v1.VolumeMount{{Name: "sec", MountPath: "/sec"}}
	})
	if result := (&SyncResult{}); !m.mountVolumes(context.Background(), pod, result) {
		t.Fatalf("mountVolumes failed: %+v", result.Steps)
	}
	if _, err := m.volumes.containerMounts(pod, &pod.Spec.Containers[0], nil); err != nil {
		t.Errorf("the downwardAPI volume: %v", err)
	}
	if _, err := m.volumes.containerMounts(pod, &pod.Spec.Containers[1], nil); err == nil || !strings.Contains(err.Error(), "standalone") {
		t.Errorf("the secret volume: %v, want an error saying the node is standalone", err)
	}
}
