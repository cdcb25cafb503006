package podspec

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedHostPathTypes = []v1.HostPathType{
	v1.HostPathUnset, v1.HostPathDirectoryOrCreate, v1.HostPathDirectory, v1.HostPathFileOrCreate,
	v1.HostPathFile, v1.HostPathSocket, v1.HostPathCharDev, v1.HostPathBlockDev,
}

// validateVolumes mirrors ValidateVolumes for what a node needs: names are
// unique DNS labels and each volume has exactly one source. It returns the
// volume names for the mounts to be checked against.
func validateVolumes(volumes []v1.Volume, path *field.Path) (sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range volumes {
		vol := &volumes[i]
		volPath := path.Index(i)
		errs = append(errs, validateDNS1123Label(vol.Name, volPath.Child("name"))...)
		if names.Has(vol.Name) {
			errs = append(errs, field.Duplicate(volPath.Child("name"), vol.Name))
		} else if vol.Name != "" {
			names.Insert(vol.Name)
		}
		sources := volumeSources(&vol.VolumeSource)
		if len(sources) == 0 {
			errs = append(errs, field.Required(volPath, "must specify a volume type"))
		}
		for _, extra := range sources[min(1, len(sources)):] {
			errs = append(errs, field.Forbidden(volPath.Child(extra), "may not specify more than 1 volume type"))
		}
		if vol.HostPath != nil {
			errs = append(errs, validateHostPath(vol.HostPath, volPath.Child("hostPath"))...)
		}
		if vol.EmptyDir != nil && vol.EmptyDir.SizeLimit != nil && vol.EmptyDir.SizeLimit.Cmp(resource.Quantity{}) < 0 {
			errs = append(errs, field.Forbidden(volPath.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity"))
		}
	}
	return names, errs
}

func validateHostPath(hp *v1.HostPathVolumeSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	pathPath := path.Child("path")
	switch {
	case hp.Path == "":
		errs = append(errs, field.Required(pathPath, ""))
	case !filepath.IsAbs(hp.Path):
		errs = append(errs, field.Invalid(pathPath, hp.Path, "must be an absolute path"))
	default:
		errs = append(errs, validatePathNoBacksteps(hp.Path, pathPath)...)
	}
	if hp.Type != nil && !slices.Contains(supportedHostPathTypes, *hp.Type) {
		errs = append(errs, field.NotSupported(path.Child("type"), *hp.Type, supportedHostPathTypes))
	}
	return errs
}

// validatePathNoBacksteps mirrors its upstream namesake.
func validatePathNoBacksteps(target string, path *field.Path) field.ErrorList {
	for _, item := range strings.Split(filepath.ToSlash(target), "/") {
		if item == ".." {
			return field.ErrorList{field.Invalid(path, target, "must not contain '..'")}
		}
	}
	return nil
}

// validateDNS1123Label mirrors ValidateDNS1123Label.
func validateDNS1123Label(value string, path *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(path, value, msg))
	}
	return errs
}

// volumeSources returns the JSON names of the sources a volume sets, in
// field order. Counting by reflection keeps up with source types added to
// k8s.io/api.
func volumeSources(vs *v1.VolumeSource) []string {
	v := reflect.ValueOf(vs).Elem()
	var set []string
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			set = append(set, jsonName(v.Type().Field(i)))
		}
	}
	return set
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}
