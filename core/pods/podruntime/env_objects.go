package podruntime

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// envObjects reads the configMaps and secrets one container's environment
// names, each once, through the same VolumeSources the volumes read, with
// upstream's messages.
type envObjects struct {
	ctx       context.Context
	namespace string
	sources   VolumeSources
	// read are the objects' data by kind and name; nil data: missing.
	read map[envObjectKey]map[string]string
}

type envObjectKey struct{ kind, name string }

func newEnvObjects(ctx context.Context, namespace string, sources VolumeSources) *envObjects {
	return &envObjects{ctx: ctx, namespace: namespace, sources: sources, read: map[envObjectKey]map[string]string{}}
}

// configMap is the data of configMap name; nil when it is missing and
// optional.
func (o *envObjects) configMap(name string, optional bool) (map[string]string, error) {
	return o.data("configMap", name, optional)
}

// secret is the data of secret name, as strings; nil when it is missing
// and optional.
func (o *envObjects) secret(name string, optional bool) (map[string]string, error) {
	return o.data("secret", name, optional)
}

// configMapKey is key of configMap name; false when it or the key is
// missing and optional.
func (o *envObjects) configMapKey(name, key string, optional bool) (string, bool, error) {
	return o.key("configMap", "ConfigMap", name, key, optional)
}

// secretKey is key of secret name; false when it or the key is missing
// and optional.
func (o *envObjects) secretKey(name, key string, optional bool) (string, bool, error) {
	return o.key("secret", "Secret", name, key, optional)
}

func (o *envObjects) key(kind, kindTitle, name, key string, optional bool) (string, bool, error) {
	data, err := o.data(kind, name, optional)
	if err != nil || data == nil {
		return "", false, err
	}
	v, ok := data[key]
	if !ok && !optional {
		return "", false, fmt.Errorf("couldn't find key %v in %s %v/%v", key, kindTitle, o.namespace, name)
	}
	return v, ok, nil
}

// data reads an object once. Only a missing object is skipped when
// optional, as upstream: a refusal or an outage fails the container, which
// is tried again at the next sync.
func (o *envObjects) data(kind, name string, optional bool) (map[string]string, error) {
	k := envObjectKey{kind, name}
	if data, ok := o.read[k]; ok {
		return data, nil
	}
	if o.sources == nil {
		return nil, fmt.Errorf("couldn't get %s %v/%v, no kubeClient defined", kind, o.namespace, name)
	}
	var data map[string]string
	var err error
	switch kind {
	case "configMap":
		cm, e := o.sources.GetConfigMap(o.ctx, o.namespace, name)
		if err = e; e == nil {
			data = cm.Data
			if data == nil {
				data = map[string]string{}
			}
		}
	default:
		s, e := o.sources.GetSecret(o.ctx, o.namespace, name)
		if err = e; e == nil {
			data = make(map[string]string, len(s.Data))
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
	}
	switch {
	case err == nil:
	case apierrors.IsNotFound(err) && optional:
		// Not remembered: a later reference to it need not be optional.
		return nil, nil
	default:
		return nil, err
	}
	o.read[k] = data
	return data, nil
}
