package podruntime

import (
	"context"
	"errors"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// defaultVolumeFileMode is the API's default defaultMode of configMap,
// secret, downwardAPI and projected volumes, for pods (static ones) that
// were not defaulted by an API server.
const defaultVolumeFileMode os.FileMode = 0o644

// errStandalone is why a node without an API server cannot set up a volume
// that projects API objects.
var errStandalone = errors.New("this node has no API server (standalone), so it cannot read configMaps, secrets or service account tokens")

// payloadBuilder computes the files of a pod's configMap, secret,
// downwardAPI and projected volumes, as upstream's MakePayload and
// CollectData of those plugins.
type payloadBuilder struct {
	sources     VolumeSources // nil on a standalone node
	allocatable v1.ResourceList
	owners      fileOwnership
}

// volumePayload is the files of vol, owned as the pod says.
func (b *payloadBuilder) volumePayload(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (map[string]fileProjection, error) {
	payload, err := b.kindPayload(ctx, pod, vol)
	if err != nil {
		return nil, err
	}
	b.owners.apply(payload)
	return payload, nil
}

// kindPayload is the files of vol by its kind.
func (b *payloadBuilder) kindPayload(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (map[string]fileProjection, error) {
	switch {
	case vol.ConfigMap != nil:
		s := vol.ConfigMap
		return b.configMapPayload(ctx, pod.Namespace, s.Name, s.Items, fileMode(s.DefaultMode), isTrue(s.Optional))
	case vol.Secret != nil:
		s := vol.Secret
		return b.secretPayload(ctx, pod.Namespace, s.SecretName, s.Items, fileMode(s.DefaultMode), isTrue(s.Optional))
	case vol.DownwardAPI != nil:
		return b.downwardAPIPayload(pod, vol.DownwardAPI.Items, fileMode(vol.DownwardAPI.DefaultMode))
	case vol.Projected != nil:
		return b.projectedPayload(ctx, pod, vol.Projected)
	}
	return nil, fmt.Errorf("volume %q is not a configMap, secret, downwardAPI or projected volume", vol.Name)
}

func (b *payloadBuilder) configMapPayload(ctx context.Context, ns, name string, items []v1.KeyToPath, mode os.FileMode, optional bool) (map[string]fileProjection, error) {
	if b.sources == nil {
		return nil, errStandalone
	}
	cm, err := b.sources.GetConfigMap(ctx, ns, name)
	if apierrors.IsNotFound(err) && optional {
		return map[string]fileProjection{}, nil
	}
	if err != nil {
		return nil, err
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	return projectKeys(data, items, mode, optional, "configmap references non-existent config key")
}

func (b *payloadBuilder) secretPayload(ctx context.Context, ns, name string, items []v1.KeyToPath, mode os.FileMode, optional bool) (map[string]fileProjection, error) {
	if b.sources == nil {
		return nil, errStandalone
	}
	secret, err := b.sources.GetSecret(ctx, ns, name)
	if apierrors.IsNotFound(err) && optional {
		return map[string]fileProjection{}, nil
	}
	if err != nil {
		return nil, err
	}
	return projectKeys(secret.Data, items, mode, optional, "references non-existent secret key")
}

// projectKeys is upstream's MakePayload: every key as a file named after
// it with mode, or only items' keys at their paths with their own modes; a
// missing key is an error unless optional.
func projectKeys(data map[string][]byte, items []v1.KeyToPath, mode os.FileMode, optional bool, missing string) (map[string]fileProjection, error) {
	payload := make(map[string]fileProjection, len(data))
	if len(items) == 0 {
		for k, v := range data {
			payload[k] = fileProjection{Data: v, Mode: mode}
		}
		return payload, nil
	}
	for _, item := range items {
		v, ok := data[item.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s: %s", missing, item.Key)
		}
		m := mode
		if item.Mode != nil {
			m = os.FileMode(*item.Mode)
		}
		payload[item.Path] = fileProjection{Data: v, Mode: m}
	}
	return payload, nil
}

// downwardAPIPayload is upstream's downwardAPI CollectData: one file per
// item with the pod field or container resource it names.
func (b *payloadBuilder) downwardAPIPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, mode os.FileMode) (map[string]fileProjection, error) {
	payload := make(map[string]fileProjection, len(items))
	var errs []error
	for _, item := range items {
		var value string
		var err error
		switch {
		case item.FieldRef != nil:
			value, err = podFieldValue(item.FieldRef, pod, envContext{})
		case item.ResourceFieldRef != nil:
			if item.ResourceFieldRef.ContainerName == "" {
				err = errors.New("resourceFieldRef needs a containerName in a volume")
				break
			}
			value, err = containerResourceValue(item.ResourceFieldRef, pod, nil, b.allocatable)
		default:
			err = errors.New("neither fieldRef nor resourceFieldRef is set")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("downwardAPI item %q: %w", item.Path, err))
			continue
		}
		m := mode
		if item.Mode != nil {
			m = os.FileMode(*item.Mode)
		}
		payload[item.Path] = fileProjection{Data: []byte(value), Mode: m}
	}
	return payload, errors.Join(errs...)
}

// projectedPayload is upstream's projected collectData: the sources'
// files together, service account tokens requested for this pod.
func (b *payloadBuilder) projectedPayload(ctx context.Context, pod *v1.Pod, p *v1.ProjectedVolumeSource) (map[string]fileProjection, error) {
	mode := fileMode(p.DefaultMode)
	payload := map[string]fileProjection{}
	var errs []error
	add := func(files map[string]fileProjection, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		for k, v := range files {
			payload[k] = v
		}
	}
	for _, s := range p.Sources {
		switch {
		case s.ConfigMap != nil:
			add(b.configMapPayload(ctx, pod.Namespace, s.ConfigMap.Name, s.ConfigMap.Items, mode, isTrue(s.ConfigMap.Optional)))
		case s.Secret != nil:
			add(b.secretPayload(ctx, pod.Namespace, s.Secret.Name, s.Secret.Items, mode, isTrue(s.Secret.Optional)))
		case s.DownwardAPI != nil:
			add(b.downwardAPIPayload(pod, s.DownwardAPI.Items, mode))
		case s.ServiceAccountToken != nil:
			add(b.tokenPayload(ctx, pod, s.ServiceAccountToken, mode))
		default:
			errs = append(errs, errors.New("projected sources other than configMap, secret, downwardAPI and serviceAccountToken are not supported on this node"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return payload, nil
}

func (b *payloadBuilder) tokenPayload(ctx context.Context, pod *v1.Pod, s *v1.ServiceAccountTokenProjection, mode os.FileMode) (map[string]fileProjection, error) {
	if b.sources == nil {
		return nil, errStandalone
	}
	token, err := b.sources.RequestToken(ctx, pod, s.Audience, s.ExpirationSeconds)
	if err != nil {
		return nil, fmt.Errorf("failed to fetch token: %w", err)
	}
	return map[string]fileProjection{s.Path: {Data: []byte(token), Mode: b.owners.tokenMode(mode), UID: b.owners.user}}, nil
}

func fileMode(m *int32) os.FileMode {
	if m == nil {
		return defaultVolumeFileMode
	}
	return os.FileMode(*m)
}

func isTrue(b *bool) bool { return b != nil && *b }
