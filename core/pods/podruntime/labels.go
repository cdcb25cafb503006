package podruntime

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubelettypes "k8s.io/kubelet/pkg/types"
)

// Annotation keys the kubelet puts on containers (pkg/kubelet/kuberuntime/
// labels.go). They carry what killing a container and rebuilding its status
// need when the pod spec is gone, e.g. after a restart of the core.
const (
	annotationPodDeletionGracePeriod          = "io.kubernetes.pod.deletionGracePeriod"
	annotationPodTerminationGracePeriod       = "io.kubernetes.pod.terminationGracePeriod"
	annotationContainerHash                   = "io.kubernetes.container.hash"
	annotationContainerRestartCount           = "io.kubernetes.container.restartCount"
	annotationContainerTerminationMessagePath = "io.kubernetes.container.terminationMessagePath"
	annotationContainerTerminationMsgPolicy   = "io.kubernetes.container.terminationMessagePolicy"
	annotationContainerPreStopHandler         = "io.kubernetes.container.preStopHandler"
	annotationContainerPorts                  = "io.kubernetes.container.ports"
)

// newPodLabels are a sandbox's labels: the pod's own plus its identity.
func newPodLabels(pod *v1.Pod) map[string]string {
	labels := make(map[string]string, len(pod.Labels)+3)
	for k, v := range pod.Labels {
		labels[k] = v
	}
	labels[kubelettypes.KubernetesPodNameLabel] = pod.Name
	labels[kubelettypes.KubernetesPodNamespaceLabel] = pod.Namespace
	labels[kubelettypes.KubernetesPodUIDLabel] = string(pod.UID)
	return labels
}

// newContainerLabels are a container's labels: the pod's identity and the
// container's name. Upstream does not copy the pod's own labels onto
// containers, and neither does microlet.
func newContainerLabels(c *v1.Container, pod *v1.Pod) map[string]string {
	return map[string]string{
		kubelettypes.KubernetesPodNameLabel:       pod.Name,
		kubelettypes.KubernetesPodNamespaceLabel:  pod.Namespace,
		kubelettypes.KubernetesPodUIDLabel:        string(pod.UID),
		kubelettypes.KubernetesContainerNameLabel: c.Name,
	}
}

// newContainerAnnotations are a container's annotations: what device
// plugins asked for, overridden by the kubelet's own keys.
func newContainerAnnotations(c *v1.Container, pod *v1.Pod, restartCount int, extra map[string]string) (map[string]string, error) {
	annotations := make(map[string]string, len(extra)+8)
	for k, v := range extra {
		annotations[k] = v
	}
	annotations[annotationContainerHash] = strconv.FormatUint(containerHash(c), 16)
	annotations[annotationContainerRestartCount] = strconv.Itoa(restartCount)
	annotations[annotationContainerTerminationMessagePath] = c.TerminationMessagePath
	annotations[annotationContainerTerminationMsgPolicy] = string(c.TerminationMessagePolicy)
	if pod.DeletionGracePeriodSeconds != nil {
		annotations[annotationPodDeletionGracePeriod] = strconv.FormatInt(*pod.DeletionGracePeriodSeconds, 10)
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		annotations[annotationPodTerminationGracePeriod] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		raw, err := json.Marshal(c.Lifecycle.PreStop)
		if err != nil {
			return nil, fmt.Errorf("encoding the preStop handler of container %q: %w", c.Name, err)
		}
		annotations[annotationContainerPreStopHandler] = string(raw)
	}
	if len(c.Ports) > 0 {
		raw, err := json.Marshal(c.Ports)
		if err != nil {
			return nil, fmt.Errorf("encoding the ports of container %q: %w", c.Name, err)
		}
		annotations[annotationContainerPorts] = string(raw)
	}
	return annotations, nil
}

// labeledContainer is what a container's labels say about it.
type labeledContainer struct {
	PodName, PodNamespace string
	PodUID                types.UID
	ContainerName         string
}

func containerFromLabels(labels map[string]string) labeledContainer {
	return labeledContainer{
		PodName:       labels[kubelettypes.KubernetesPodNameLabel],
		PodNamespace:  labels[kubelettypes.KubernetesPodNamespaceLabel],
		PodUID:        types.UID(labels[kubelettypes.KubernetesPodUIDLabel]),
		ContainerName: labels[kubelettypes.KubernetesContainerNameLabel],
	}
}

// annotatedContainer is what a container's annotations say about it.
type annotatedContainer struct {
	Hash                      uint64
	RestartCount              int
	PodDeletionGracePeriod    *int64
	PodTerminationGracePeriod *int64
	TerminationMessagePath    string
	TerminationMessagePolicy  v1.TerminationMessagePolicy
	PreStopHandler            *v1.LifecycleHandler
	Ports                     []v1.ContainerPort
}

// containerFromAnnotations reads a container's annotations. A value that
// does not parse is left at its zero value and reported, as upstream does:
// one bad annotation must not hide the container.
func containerFromAnnotations(annotations map[string]string) (annotatedContainer, error) {
	a := annotatedContainer{
		TerminationMessagePath:   annotations[annotationContainerTerminationMessagePath],
		TerminationMessagePolicy: v1.TerminationMessagePolicy(annotations[annotationContainerTerminationMsgPolicy]),
	}
	var errs []error
	bad := func(key string, err error) {
		errs = append(errs, fmt.Errorf("annotation %s=%q: %w", key, annotations[key], err))
	}
	if s, ok := annotations[annotationContainerHash]; ok {
		h, err := strconv.ParseUint(s, 16, 64)
		if err != nil {
			bad(annotationContainerHash, err)
		}
		a.Hash = h
	}
	if s, ok := annotations[annotationContainerRestartCount]; ok {
		n, err := strconv.Atoi(s)
		if err != nil {
			bad(annotationContainerRestartCount, err)
		}
		a.RestartCount = n
	}
	for _, g := range []struct {
		key string
		dst **int64
	}{
		{annotationPodDeletionGracePeriod, &a.PodDeletionGracePeriod},
		{annotationPodTerminationGracePeriod, &a.PodTerminationGracePeriod},
	} {
		if s, ok := annotations[g.key]; ok {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				bad(g.key, err)
				continue
			}
			*g.dst = &n
		}
	}
	if s, ok := annotations[annotationContainerPreStopHandler]; ok {
		var h v1.LifecycleHandler
		if err := json.Unmarshal([]byte(s), &h); err != nil {
			bad(annotationContainerPreStopHandler, err)
		} else {
			a.PreStopHandler = &h
		}
	}
	if s, ok := annotations[annotationContainerPorts]; ok {
		if err := json.Unmarshal([]byte(s), &a.Ports); err != nil {
			bad(annotationContainerPorts, err)
		}
	}
	return a, errors.Join(errs...)
}
