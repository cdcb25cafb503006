package podspec

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// apiBackedVolumeSources are the volume sources that need an API object,
// by JSON name, with the resource named in the message as upstream's
// HasAPIObjectReference (pkg/api/pod/util.go) names it.
var apiBackedVolumeSources = map[string]string{
	"configMap":             "configmaps",
	"secret":                "secrets",
	"csi":                   "csidrivers",
	"glusterfs":             "endpoints",
	"persistentVolumeClaim": "persistentvolumeclaims",
	"ephemeral":             "persistentvolumeclaims",
	"azureFile":             "secrets",
}

// validateNoAPIReferences rejects what a static pod cannot have: references
// to API objects (service accounts, secrets, config maps, claims). There is
// no API server to read them from, and upstream refuses them too
// (PreventStaticPodAPIReferences, on by default since 1.34). Unlike
// upstream's single message, each reference is named by its field.
func validateNoAPIReferences(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbid := func(p *field.Path, resource string) {
		errs = append(errs, field.Forbidden(p, "static pods may not reference "+resource))
	}
	if spec.ServiceAccountName != "" {
		forbid(path.Child("serviceAccountName"), "serviceaccounts")
	}
	if spec.DeprecatedServiceAccount != "" {
		forbid(path.Child("serviceAccount"), "serviceaccounts")
	}
	for i := range spec.ImagePullSecrets {
		forbid(path.Child("imagePullSecrets").Index(i), "secrets")
	}
	if len(spec.ResourceClaims) > 0 {
		forbid(path.Child("resourceClaims"), "resourceclaims")
	}
	for i := range spec.Volumes {
		volPath := path.Child("volumes").Index(i)
		vs := &spec.Volumes[i].VolumeSource
		for _, source := range volumeSources(vs) {
			if resource, ok := apiBackedVolumeSources[source]; ok {
				forbid(volPath.Child(source), resource)
			}
		}
		if p, ok := secretRefPath(vs); ok {
			forbid(volPath.Child(p, "secretRef"), "secrets")
		}
		if vs.Projected != nil {
			errs = append(errs, validateProjectedSources(vs.Projected.Sources, volPath.Child("projected", "sources"))...)
		}
	}
	visit := func(containers []v1.Container, p *field.Path) {
		for i := range containers {
			errs = append(errs, validateContainerEnvRefs(&containers[i], p.Index(i))...)
		}
	}
	visit(spec.InitContainers, path.Child("initContainers"))
	visit(spec.Containers, path.Child("containers"))
	return errs
}

func validateProjectedSources(sources []v1.VolumeProjection, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j, s := range sources {
		p := path.Index(j)
		switch {
		case s.ConfigMap != nil:
			errs = append(errs, field.Forbidden(p.Child("configMap"), "static pods may not reference configmaps"))
		case s.Secret != nil:
			errs = append(errs, field.Forbidden(p.Child("secret"), "static pods may not reference secrets"))
		case s.ServiceAccountToken != nil:
			errs = append(errs, field.Forbidden(p.Child("serviceAccountToken"), "static pods may not reference serviceaccounts"))
		case s.ClusterTrustBundle != nil:
			errs = append(errs, field.Forbidden(p.Child("clusterTrustBundle"), "static pods may not reference clustertrustbundles"))
		case s.PodCertificate != nil:
			errs = append(errs, field.Forbidden(p.Child("podCertificate"), "static pods may not reference podcertificates"))
		}
	}
	return errs
}

func validateContainerEnvRefs(c *v1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, env := range c.Env {
		if env.ValueFrom == nil {
			continue
		}
		p := path.Child("env").Index(i).Child("valueFrom")
		if env.ValueFrom.SecretKeyRef != nil {
			errs = append(errs, field.Forbidden(p.Child("secretKeyRef"), "static pods may not reference secrets"))
		}
		if env.ValueFrom.ConfigMapKeyRef != nil {
			errs = append(errs, field.Forbidden(p.Child("configMapKeyRef"), "static pods may not reference configmaps"))
		}
	}
	for i, from := range c.EnvFrom {
		p := path.Child("envFrom").Index(i)
		if from.SecretRef != nil {
			errs = append(errs, field.Forbidden(p.Child("secretRef"), "static pods may not reference secrets"))
		}
		if from.ConfigMapRef != nil {
			errs = append(errs, field.Forbidden(p.Child("configMapRef"), "static pods may not reference configmaps"))
		}
	}
	return errs
}

// secretRefPath finds a volume source that names a secret in a SecretRef
// field (cephfs, cinder, flexVolume, iscsi, rbd, scaleIO, storageos) and
// returns its JSON name.
func secretRefPath(vs *v1.VolumeSource) (string, bool) {
	v := reflect.ValueOf(vs).Elem()
	for i := range v.NumField() {
		source := v.Field(i)
		if source.Kind() != reflect.Pointer || source.IsNil() {
			continue
		}
		ref := source.Elem().FieldByName("SecretRef")
		if ref.IsValid() && ref.Kind() == reflect.Pointer && !ref.IsNil() {
			return jsonName(v.Type().Field(i)), true
		}
	}
	return "", false
}
