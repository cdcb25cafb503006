package podruntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/cluster/events"
)

// VolumeSources reads what configMap, secret and projected volumes show,
// and the configMaps and secrets of containers' environments, from the API
// server (core/cluster/volumesources implements it). Errors for missing
// objects satisfy apierrors.IsNotFound; the objects are shared, callers
// must not modify them.
type VolumeSources interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
	// RequestToken is a token of the pod's service account bound to the
	// pod, for audience ("" the API server's) and with the given lifetime
	// (nil the API server's default), renewed before it expires.
	RequestToken(ctx context.Context, pod *v1.Pod, audience string, expirationSeconds *int64) (string, error)
}

// The kubelet's plugin directories of the projected volume kinds.
const (
	configMapPluginDir   = "kubernetes.io~configmap"
	secretPluginDir      = "kubernetes.io~secret"
	downwardAPIPluginDir = "kubernetes.io~downward-api"
	projectedPluginDir   = "kubernetes.io~projected"
	projectedVolumePerm  = 0o755
)

// projectedPluginDirOf is the plugin directory of a volume whose files the
// node writes, "" for other kinds.
func projectedPluginDirOf(vol *v1.Volume) string {
	switch {
	case vol.ConfigMap != nil:
		return configMapPluginDir
	case vol.Secret != nil:
		return secretPluginDir
	case vol.DownwardAPI != nil:
		return downwardAPIPluginDir
	case vol.Projected != nil:
		return projectedPluginDir
	}
	return ""
}

// canSetUp reports whether vol is of a projected kind this node can write:
// a standalone node has no API server to read objects or tokens from.
func (v *volumeManager) canSetUp(vol *v1.Volume) bool {
	if projectedPluginDirOf(vol) == "" {
		return false
	}
	return v.sources != nil || !needsAPIServer(vol)
}

// needsAPIServer reports whether vol shows API objects or tokens.
func needsAPIServer(vol *v1.Volume) bool {
	if vol.ConfigMap != nil || vol.Secret != nil {
		return true
	}
	if vol.Projected != nil {
		for _, s := range vol.Projected.Sources {
			if s.DownwardAPI == nil {
				return true
			}
		}
	}
	return false
}

func (v *volumeManager) projectedVolumePath(uid types.UID, vol *v1.Volume) string {
	return filepath.Join(v.podDir(uid), podVolumesDirName, projectedPluginDirOf(vol), vol.Name)
}

// setUpPodVolumes writes the files of the pod's configMap, secret,
// downwardAPI and projected volumes, as the kubelet's volume manager does
// on every pod sync: a changed object or a renewed token reaches the
// files then, unchanged ones are not rewritten. Every volume is tried; each
// failure is a FailedMount event, and the error names them all.
func (v *volumeManager) setUpPodVolumes(ctx context.Context, pod *v1.Pod) error {
	v.book.want(pod)
	b := &payloadBuilder{sources: v.sources, allocatable: v.allocatable(), owners: podFileOwnership(pod)}
	var errs []error
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if !v.canSetUp(vol) {
			continue // the container using it fails with the reason
		}
		// Timed at every sync: the kubelet mounts these kinds again on
		// every sync too (RequiresRemount).
		start := time.Now()
		err := v.setUpProjected(ctx, pod, vol, b)
		v.book.mount(pod, vol, start, err)
		if err != nil {
			err = fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", vol.Name, err)
			v.events.Eventf(pod, v1.EventTypeWarning, events.FailedMountVolume, "%v", err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// setUpProjected writes one volume. Secrets, downwardAPI and projected
// volumes live on a tmpfs, as upstream, so that secrets never reach a disk;
// configMaps on the node's disk.
func (v *volumeManager) setUpProjected(ctx context.Context, pod *v1.Pod, vol *v1.Volume, b *payloadBuilder) error {
	payload, err := b.volumePayload(ctx, pod, vol)
	if err != nil {
		return err
	}
	dir := v.projectedVolumePath(pod.UID, vol)
	if err := os.MkdirAll(dir, projectedVolumePerm); err != nil {
		return err
	}
	if vol.ConfigMap == nil {
		if err := v.mountTmpfsOnce(dir, emptyDirMemorySize(pod, nil, b.allocatable)); err != nil {
			return err
		}
	}
	// The tmpfs root is world-writable; the kubelet's is not.
	if err := os.Chmod(dir, projectedVolumePerm); err != nil {
		return err
	}
	return atomicWrite(dir, payload, v.now())
}

// projectedSetUp reports whether every configMap, secret, downwardAPI and
// projected volume of the pod the node can write has been written once.
func (v *volumeManager) projectedSetUp(pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if !v.canSetUp(vol) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(v.projectedVolumePath(pod.UID, vol), atomicDataDir)); err != nil {
			return false
		}
	}
	return true
}
