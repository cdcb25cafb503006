// Package podview builds the read-only views of pods and the node that
// plugins receive (microlet.types.v1), from the core's own state: the pod
// spec, its API status and what the runtime reports.
package podview

import (
	"google.golang.org/protobuf/types/known/timestamppb"
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pods/podspec"
	"github.com/microlet/microlet/core/runtime/container"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// Paths says where the core keeps a pod's files on the node.
type Paths interface {
	// EmptyDirPath is the host directory of a pod's emptyDir volume.
	EmptyDirPath(pod *v1.Pod, volume string) string
	// LogDirectory is the pod's log directory (<podLogsDir>/<ns>_<name>_<uid>).
	LogDirectory(pod *v1.Pod) string
}

// Extra is what the core decided about a pod beyond its spec and status.
type Extra struct {
	// QOSClass as the cgroup plugin decided it; empty falls back to the
	// API status's.
	QOSClass string
	// CgroupParent is the pod's cgroup, if one was made.
	CgroupParent string
	// Terminating is true once the pod has been asked to stop.
	Terminating bool
}

// Pod builds the view of one pod. apiStatus and runtime may be nil.
func Pod(pod *v1.Pod, apiStatus *v1.PodStatus, runtime *container.PodStatus, extra Extra, paths Paths) *typesv1.Pod {
	view := &typesv1.Pod{
		Uid:                           string(pod.UID),
		Namespace:                     pod.Namespace,
		Name:                          pod.Name,
		Labels:                        pod.Labels,
		Annotations:                   pod.Annotations,
		QosClass:                      extra.QOSClass,
		Priority:                      Priority(pod),
		PriorityClassName:             pod.Spec.PriorityClassName,
		Critical:                      IsCritical(pod),
		InitContainers:                containers(pod.Spec.InitContainers, runtime, true),
		Containers:                    containers(pod.Spec.Containers, runtime, false),
		TerminationGracePeriodSeconds: terminationGracePeriod(pod),
		HostNetwork:                   pod.Spec.HostNetwork,
		Source:                        pod.Annotations[podspec.ConfigSourceAnnotationKey],
		CgroupParent:                  extra.CgroupParent,
		Volumes:                       volumes(pod, paths),
		Terminating:                   extra.Terminating || pod.DeletionTimestamp != nil,
	}
	if pod.Spec.Resources != nil {
		view.PodResources = resources(*pod.Spec.Resources)
	}
	if paths != nil {
		view.LogDirectory = paths.LogDirectory(pod)
	}
	if apiStatus != nil {
		view.Phase = string(apiStatus.Phase)
		if view.QosClass == "" {
			view.QosClass = string(apiStatus.QOSClass)
		}
		if apiStatus.StartTime != nil {
			view.StartTime = timestamppb.New(apiStatus.StartTime.Time)
		}
		for _, ip := range apiStatus.PodIPs {
			view.PodIps = append(view.PodIps, ip.IP)
		}
	}
	if len(view.PodIps) == 0 {
		view.PodIps = runtime.IPs()
	}
	if runtime != nil && len(runtime.Sandboxes) > 0 {
		view.SandboxId = runtime.Sandboxes[0].ID
	}
	return view
}

func terminationGracePeriod(pod *v1.Pod) int64 {
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return v1.DefaultTerminationGracePeriodSeconds
}

func containers(specs []v1.Container, runtime *container.PodStatus, init bool) []*typesv1.Container {
	out := make([]*typesv1.Container, 0, len(specs))
	for i := range specs {
		c := &specs[i]
		view := &typesv1.Container{
			Name:        c.Name,
			Image:       c.Image,
			Resources:   resources(c.Resources),
			Restartable: init && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways,
		}
		for _, p := range c.Ports {
			view.Ports = append(view.Ports, &typesv1.ContainerPort{Name: p.Name, ContainerPort: p.ContainerPort, Protocol: string(p.Protocol)})
		}
		if st := runtime.Container(c.Name); st != nil {
			view.ContainerId = st.ID
			view.State = string(st.State)
			view.RestartCount = int32(st.RestartCount)
			if !st.StartedAt.IsZero() {
				view.StartedAt = timestamppb.New(st.StartedAt)
			}
		}
		out = append(out, view)
	}
	return out
}

func volumes(pod *v1.Pod, paths Paths) []*typesv1.Volume {
	var out []*typesv1.Volume
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.EmptyDir != nil:
			view := &typesv1.Volume{Name: v.Name, Type: "emptyDir", Medium: string(v.EmptyDir.Medium)}
			if paths != nil {
				view.HostPath = paths.EmptyDirPath(pod, v.Name)
			}
			if v.EmptyDir.SizeLimit != nil {
				limit := v.EmptyDir.SizeLimit.Value()
				view.SizeLimitBytes = &limit
			}
			out = append(out, view)
		case v.HostPath != nil:
			out = append(out, &typesv1.Volume{Name: v.Name, Type: "hostPath", HostPath: v.HostPath.Path})
		}
	}
	return out
}
