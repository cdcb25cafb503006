package podruntime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/microlet/microlet/core/pods/podspec"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// envVar is one variable of a container's environment.
type envVar struct {
	Name, Value string
}

// envContext is what a container's environment is made from besides its
// spec.
type envContext struct {
	nodeName    string
	nodeIPs     []net.IP
	podIPs      []string
	allocatable v1.ResourceList
	// deviceEnvs are what device plugins set; the container's own
	// variables win.
	deviceEnvs map[string]string
	// sources reads the configMaps and secrets env and envFrom name; nil
	// on a standalone node.
	sources VolumeSources
	// serviceEnv are the variables of the Services the pod sees
	// (serviceEnv); the container's own win.
	serviceEnv map[string]string
}

// containerEnv is the container's environment, as upstream's
// makeEnvironmentVariables: envFrom's configMaps and secrets (keys with
// their prefix), then env, whose values may refer with $(VAR) to the
// variables set before them and to the service variables, and whose
// valueFrom reads a pod field, a container resource or a configMap or
// secret key; then the service variables the container did not set.
// A configMap, secret or key that is missing fails the container unless
// it is optional.
//
// The order is the device plugins' variables by name, then the container's
// as first set, then the service variables by name (upstream's comes from
// a map and is random).
func containerEnv(ctx context.Context, pod *v1.Pod, c *v1.Container, ec envContext) ([]envVar, error) {
	values := map[string]string{}
	var order []string
	set := func(name, value string) {
		if _, ok := values[name]; !ok {
			order = append(order, name)
		}
		values[name] = value
	}
	objects := newEnvObjects(ctx, pod.Namespace, ec.sources)
	for _, from := range c.EnvFrom {
		var data map[string]string
		var err error
		switch {
		case from.ConfigMapRef != nil:
			data, err = objects.configMap(from.ConfigMapRef.Name, isTrue(from.ConfigMapRef.Optional))
		case from.SecretRef != nil:
			data, err = objects.secret(from.SecretRef.Name, isTrue(from.SecretRef.Optional))
		}
		if err != nil {
			return nil, err
		}
		// Sorted, so that the order of the variables does not change from
		// one instance to the next.
		for _, k := range slices.Sorted(maps.Keys(data)) {
			set(from.Prefix+k, data[k])
		}
	}
	lookup := podspec.MapLookup(values, ec.serviceEnv)
	for _, e := range c.Env {
		value := e.Value
		switch {
		case value != "":
			value = podspec.Expand(value, lookup)
		case e.ValueFrom == nil:
		case e.ValueFrom.FieldRef != nil:
			v, err := podFieldValue(e.ValueFrom.FieldRef, pod, ec)
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			value = v
		case e.ValueFrom.ResourceFieldRef != nil:
			v, err := containerResourceValue(e.ValueFrom.ResourceFieldRef, pod, c, ec.allocatable)
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			value = v
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			v, ok, err := objects.configMapKey(ref.Name, ref.Key, isTrue(ref.Optional))
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			value = v
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			v, ok, err := objects.secretKey(ref.Name, ref.Key, isTrue(ref.Optional))
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			value = v
		default:
			return nil, fmt.Errorf("env %s: valueFrom names no source microlet supports (fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef)", e.Name)
		}
		set(e.Name, value)
	}

	var env []envVar
	deviceNames := make([]string, 0, len(ec.deviceEnvs))
	for name := range ec.deviceEnvs {
		if _, overridden := values[name]; !overridden {
			deviceNames = append(deviceNames, name)
		}
	}
	slices.Sort(deviceNames)
	for _, name := range deviceNames {
		env = append(env, envVar{Name: name, Value: ec.deviceEnvs[name]})
	}
	for _, name := range order {
		env = append(env, envVar{Name: name, Value: values[name]})
	}
	for _, name := range slices.Sorted(maps.Keys(ec.serviceEnv)) {
		if _, overridden := values[name]; !overridden {
			env = append(env, envVar{Name: name, Value: ec.serviceEnv[name]})
		}
	}
	return env, nil
}

// envMap is an environment as a map, for $(VAR) expansion.
func envMap(env []envVar) map[string]string {
	m := make(map[string]string, len(env))
	for _, e := range env {
		m[e.Name] = e.Value
	}
	return m
}

// podFieldValue is upstream's podFieldSelectorRuntimeValue: the value of a
// downward API field of the pod.
func podFieldValue(fs *v1.ObjectFieldSelector, pod *v1.Pod, ec envContext) (string, error) {
	if fs.APIVersion != "" && fs.APIVersion != "v1" {
		return "", fmt.Errorf("unsupported pod version: %s", fs.APIVersion)
	}
	podIPs := sortPodIPs(ec.podIPs, ec.nodeIPs)
	switch fs.FieldPath {
	case "spec.nodeName":
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		return ec.nodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		if len(ec.nodeIPs) == 0 {
			return "", errors.New("cannot resolve " + fs.FieldPath + ": the node's IP addresses are not known")
		}
		if fs.FieldPath == "status.hostIP" {
			return ec.nodeIPs[0].String(), nil
		}
		ips := make([]string, len(ec.nodeIPs))
		for i, ip := range ec.nodeIPs {
			ips[i] = ip.String()
		}
		return strings.Join(ips, ","), nil
	case "status.podIP":
		if len(podIPs) == 0 {
			return "", nil
		}
		return podIPs[0], nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	}
	if path, key, ok := splitSubscriptedPath(fs.FieldPath); ok {
		switch path {
		case "metadata.annotations":
			if errs := validation.IsQualifiedName(strings.ToLower(key)); len(errs) != 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", fs.FieldPath, strings.Join(errs, ";"))
			}
			return pod.Annotations[key], nil
		case "metadata.labels":
			if errs := validation.IsQualifiedName(key); len(errs) != 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", fs.FieldPath, strings.Join(errs, ";"))
			}
			return pod.Labels[key], nil
		}
		return "", fmt.Errorf("fieldPath %q does not support subscript", fs.FieldPath)
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", fs.FieldPath)
}

// sortPodIPs puts the pod address of the node's primary family first, as
// upstream (kubernetes#97979).
func sortPodIPs(podIPs []string, nodeIPs []net.IP) []string {
	if len(podIPs) < 2 || len(nodeIPs) == 0 {
		return podIPs
	}
	wantV4 := nodeIPs[0].To4() != nil
	sorted := slices.Clone(podIPs)
	slices.SortStableFunc(sorted, func(a, b string) int {
		af, bf := isV4(a) == wantV4, isV4(b) == wantV4
		switch {
		case af && !bf:
			return -1
		case bf && !af:
			return 1
		}
		return 0
	})
	return sorted
}

func isV4(ip string) bool {
	parsed := net.ParseIP(ip)
	return parsed != nil && parsed.To4() != nil
}

// splitSubscriptedPath splits "metadata.labels['key']" into its path and
// key.
func splitSubscriptedPath(fieldPath string) (string, string, bool) {
	if !strings.HasSuffix(fieldPath, "']") {
		return "", "", false
	}
	path, key, ok := strings.Cut(strings.TrimSuffix(fieldPath, "']"), "['")
	if !ok || path == "" {
		return "", "", false
	}
	return path, key, true
}

// formatMap renders labels or annotations as the downward API does: one
// key="value" per line, sorted.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = fmt.Sprintf("%v=%q", k, m[k])
	}
	return strings.Join(lines, "\n")
}

// containerResourceValue is upstream's containerResourceRuntimeValue: a
// container's request or limit in units of the divisor, rounded up. A limit
// the container does not set is the node's allocatable amount, as upstream's
// defaultPodLimitsForDownwardAPI.
func containerResourceValue(fs *v1.ResourceFieldSelector, pod *v1.Pod, self *v1.Container, allocatable v1.ResourceList) (string, error) {
	c := self
	if fs.ContainerName != "" {
		if c = containerSpec(pod, fs.ContainerName); c == nil {
			return "", fmt.Errorf("container %s not found", fs.ContainerName)
		}
	}
	divisor := resource.MustParse("1")
	if !fs.Divisor.IsZero() {
		divisor = fs.Divisor
	}
	limits := c.Resources.Limits.DeepCopy()
	if limits == nil {
		limits = v1.ResourceList{}
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		if _, ok := limits[name]; !ok {
			if q, ok := allocatable[name]; ok {
				limits[name] = q.DeepCopy()
			}
		}
	}
	requests := c.Resources.Requests
	scope, name, ok := strings.Cut(fs.Resource, ".")
	if !ok || (scope != "limits" && scope != "requests") {
		return "", unsupportedResource(fs.Resource)
	}
	list := requests
	if scope == "limits" {
		list = limits
	}
	quantity := list[v1.ResourceName(name)]
	switch {
	case name == string(v1.ResourceCPU):
		return strconv.FormatInt(int64(math.Ceil(float64(quantity.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case name == string(v1.ResourceMemory), name == string(v1.ResourceEphemeralStorage),
		strings.HasPrefix(name, v1.ResourceHugePagesPrefix):
		return strconv.FormatInt(int64(math.Ceil(float64(quantity.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", unsupportedResource(fs.Resource)
}

func unsupportedResource(name string) error {
	return fmt.Errorf("unsupported container resource %q; want limits.<r> or requests.<r> with <r> cpu, memory, ephemeral-storage or hugepages-<size>", name)
}
