package events

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/reference"
)

// Recorder records events about an object: client-go's recorder. The
// object is a *v1.Pod, a *v1.Node or an *v1.ObjectReference (ContainerRef,
// NodeRef).
type Recorder = record.EventRecorder

// Nop records nothing: the recorder of a node without an API server.
var Nop Recorder = nop{}

type nop struct{}

func (nop) Event(runtime.Object, string, string, string)                  {}
func (nop) Eventf(runtime.Object, string, string, string, ...interface{}) {}
func (nop) AnnotatedEventf(runtime.Object, map[string]string, string, string, string, ...interface{}) {
}

// OrNop is r, or Nop when r is nil, so that a component's option may be
// left unset.
func OrNop(r Recorder) Recorder {
	if r == nil {
		return Nop
	}
	return r
}

// NodeRef is the reference the kubelet records node events against: kind
// Node, the node's name, and the name again as UID (upstream's nodeRef), so
// that events of the node keep one identity across re-registrations.
func NodeRef(nodeName string) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: nodeName, UID: types.UID(nodeName)}
}

// ContainerRef is a container's reference for its events, as upstream's
// GenerateContainerRef: the pod's reference with the container's field
// path (spec.containers{name}, spec.initContainers{name} or
// spec.ephemeralContainers{name}). For a static pod it is the static pod's
// own reference (its namespace, name and UID), as upstream records it.
func ContainerRef(pod *v1.Pod, containerName string) (*v1.ObjectReference, error) {
	return reference.GetPartialReference(scheme.Scheme, pod, containerFieldPath(pod, containerName))
}

// containerFieldPath is upstream's fieldpath.ExtractContainerFieldPath for
// a container named in pod's spec, and spec.containers{name} otherwise.
func containerFieldPath(pod *v1.Pod, name string) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return fmt.Sprintf("spec.initContainers{%s}", name)
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return fmt.Sprintf("spec.ephemeralContainers{%s}", name)
		}
	}
	return fmt.Sprintf("spec.containers{%s}", name)
}

// RecordContainer records an event about a container of pod, as upstream's
// recordContainerEvent: the container's ID, were it in the message, is
// replaced by its name, so that repeats of an event correlate instead of
// each being new. A container whose reference cannot be made records
// nothing (upstream logs it).
func RecordContainer(r Recorder, pod *v1.Pod, containerName, containerID, eventType, reason, message string) {
	ref, err := ContainerRef(pod, containerName)
	if err != nil {
		return
	}
	if containerID != "" {
		message = strings.ReplaceAll(message, containerID, containerName)
	}
	r.Event(ref, eventType, reason, message)
}
