package podspec

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// SetDefaults applies the API server's defaults that matter on a node to a
// pod, as the kubelet's decoder does for static pods. The rules are ported
// from k8s.io/kubernetes pkg/apis/core/v1/defaults.go and the generated
// zz_generated.defaults.go (not importable without the whole kubernetes
// module); each names the upstream function it mirrors. Not ported: the
// pod-level resources defaults (PodLevelResources), image volumes' pull
// policy (ImageVolume) and the defaults of API-backed volume types that a
// static pod may not use.
func SetDefaults(pod *v1.Pod) {
	setPodSpecDefaults(&pod.Spec)
	setPodDefaults(pod)
	for i := range pod.Spec.Volumes {
		setVolumeDefaults(&pod.Spec.Volumes[i])
	}
	setResourceListDefaults(pod.Spec.Overhead)
	if pod.Spec.Resources != nil {
		setResourceListDefaults(pod.Spec.Resources.Limits)
		setResourceListDefaults(pod.Spec.Resources.Requests)
	}
	for i := range pod.Spec.InitContainers {
		setContainerDefaults(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		setContainerDefaults(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		// SetDefaults_EphemeralContainer: as a container.
		setContainerDefaults((*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
}

// setPodSpecDefaults mirrors SetDefaults_PodSpec.
func setPodSpecDefaults(spec *v1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &v1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		period := int64(v1.DefaultTerminationGracePeriodSeconds)
		spec.TerminationGracePeriodSeconds = &period
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = v1.DefaultSchedulerName
	}
}

// setPodDefaults mirrors SetDefaults_Pod.
func setPodDefaults(pod *v1.Pod) {
	// Requests default to limits, for init and regular containers only.
	for _, containers := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			defaultRequestsToLimits(&containers[i].Resources)
		}
	}
	if pod.Spec.EnableServiceLinks == nil {
		enable := v1.DefaultEnableServiceLinks
		pod.Spec.EnableServiceLinks = &enable
	}
	if pod.Spec.HostNetwork {
		defaultHostNetworkPorts(pod.Spec.InitContainers)
		defaultHostNetworkPorts(pod.Spec.Containers)
	}
}

func defaultRequestsToLimits(r *v1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = make(v1.ResourceList, len(r.Limits))
	}
	for name, limit := range r.Limits {
		if _, set := r.Requests[name]; !set {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

// defaultHostNetworkPorts mirrors defaultHostNetworkPorts: with host
// networking a container port is also the host port.
func defaultHostNetworkPorts(containers []v1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			if containers[i].Ports[j].HostPort == 0 {
				containers[i].Ports[j].HostPort = containers[i].Ports[j].ContainerPort
			}
		}
	}
}

// setContainerDefaults mirrors SetDefaults_Container plus the generated
// defaults of what a container holds.
func setContainerDefaults(c *v1.Container) {
	if c.ImagePullPolicy == "" {
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = v1.PullAlways
		} else {
			c.ImagePullPolicy = v1.PullIfNotPresent
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		// ContainerPort.Protocol: +default="TCP".
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = v1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if from := c.Env[i].ValueFrom; from != nil && from.FieldRef != nil {
			setObjectFieldSelectorDefaults(from.FieldRef)
		}
	}
	setResourceListDefaults(c.Resources.Limits)
	setResourceListDefaults(c.Resources.Requests)
	for _, probe := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if probe != nil {
			setProbeDefaults(probe)
		}
	}
	if c.Lifecycle != nil {
		for _, handler := range []*v1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if handler != nil && handler.HTTPGet != nil {
				setHTTPGetActionDefaults(handler.HTTPGet)
			}
		}
	}
}

// imageTag returns the tag an image reference pulls, as
// pkg/util/parsers.ParseImageName does for SetDefaults_Container: "latest"
// when neither a tag nor a digest is given, "" for a digest alone.
func imageTag(image string) string {
	name, _, hasDigest := strings.Cut(image, "@")
	lastComponent := name[strings.LastIndexByte(name, '/')+1:]
	if _, tag, tagged := strings.Cut(lastComponent, ":"); tagged {
		return tag
	}
	if hasDigest {
		return ""
	}
	return "latest"
}

// setProbeDefaults mirrors SetDefaults_Probe and the generated defaults of
// its handler: SetDefaults_HTTPGetAction and GRPCAction.Service
// (+default="").
func setProbeDefaults(p *v1.Probe) {
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if p.HTTPGet != nil {
		setHTTPGetActionDefaults(p.HTTPGet)
	}
	if p.GRPC != nil && p.GRPC.Service == nil {
		service := ""
		p.GRPC.Service = &service
	}
}

// setHTTPGetActionDefaults mirrors SetDefaults_HTTPGetAction.
func setHTTPGetActionDefaults(a *v1.HTTPGetAction) {
	if a.Path == "" {
		a.Path = "/"
	}
	if a.Scheme == "" {
		a.Scheme = v1.URISchemeHTTP
	}
}

// setResourceListDefaults mirrors SetDefaults_ResourceList: quantities are
// rounded up to milli scale.
func setResourceListDefaults(list v1.ResourceList) {
	for name, quantity := range list {
		const milliScale = -3
		quantity.RoundUp(milliScale)
		list[name] = quantity
	}
}

// setObjectFieldSelectorDefaults mirrors SetDefaults_ObjectFieldSelector.
func setObjectFieldSelectorDefaults(s *v1.ObjectFieldSelector) {
	if s.APIVersion == "" {
		s.APIVersion = "v1"
	}
}

// setVolumeDefaults mirrors SetDefaults_Volume and the generated defaults of
// the volume sources a static pod may use.
func setVolumeDefaults(vol *v1.Volume) {
	if len(volumeSources(&vol.VolumeSource)) == 0 {
		vol.EmptyDir = &v1.EmptyDirVolumeSource{}
	}
	if vol.HostPath != nil && vol.HostPath.Type == nil {
		// SetDefaults_HostPathVolumeSource.
		unset := v1.HostPathUnset
		vol.HostPath.Type = &unset
	}
	if vol.DownwardAPI != nil {
		// SetDefaults_DownwardAPIVolumeSource.
		if vol.DownwardAPI.DefaultMode == nil {
			mode := v1.DownwardAPIVolumeSourceDefaultMode
			vol.DownwardAPI.DefaultMode = &mode
		}
		setDownwardAPIItemDefaults(vol.DownwardAPI.Items)
	}
	if vol.Projected != nil {
		// SetDefaults_ProjectedVolumeSource.
		if vol.Projected.DefaultMode == nil {
			mode := v1.ProjectedVolumeSourceDefaultMode
			vol.Projected.DefaultMode = &mode
		}
		for _, source := range vol.Projected.Sources {
			if source.DownwardAPI != nil {
				setDownwardAPIItemDefaults(source.DownwardAPI.Items)
			}
		}
	}
}

func setDownwardAPIItemDefaults(items []v1.DownwardAPIVolumeFile) {
	for i := range items {
		if items[i].FieldRef != nil {
			setObjectFieldSelectorDefaults(items[i].FieldRef)
		}
	}
}
