// Package mirrorpods keeps a mirror pod in the API server for every static
// pod of the node (from the manifest path, the URL or the push endpoint),
// as upstream's kubelet does (pkg/kubelet/pod/mirror_client.go, syncPod and
// HandlePodCleanups): the static pod's copy, annotated
// kubernetes.io/config.mirror with its hash and owned by the Node, created
// when missing, replaced when deleted or out of date, and deleted when the
// static pod is gone. The mirror pod's status is the static pod's; the
// podstatus syncer writes it.
package mirrorpods

import (
	"cmp"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/pods/podspec"
)

// plan is what the manager must change in the API: mirror pods to create
// and mirror pods to delete (by UID, so a newer one is never deleted).
type plan struct {
	create []*v1.Pod
	delete []*v1.Pod
}

// planMirrors compares the static pods the node holds with the mirror pods
// the API has. running says whether a static pod runs (not terminating or
// refused): only running static pods get a new mirror, as upstream creates
// them in syncPod. node is the Node the mirrors belong to; nil, or a Node
// being deleted, holds creations back.
func planMirrors(static []*v1.Pod, running func(*v1.Pod) bool, mirrors []*v1.Pod, node *v1.Node) plan {
	var p plan
	byName := make(map[string]*v1.Pod, len(static))
	for _, pod := range static {
		byName[fullName(pod)] = pod
	}
	mirrored := map[string]bool{}
	for _, m := range mirrors {
		pod, ok := byName[fullName(m)]
		switch {
		case !ok:
			p.delete = append(p.delete, m) // the static pod is gone
		case m.DeletionTimestamp != nil || m.Annotations[podspec.ConfigMirrorAnnotationKey] != hash(pod):
			p.delete = append(p.delete, m) // deleted by someone, or of an older version: replace it
		default:
			mirrored[fullName(pod)] = true
		}
	}
	if node == nil || node.DeletionTimestamp != nil {
		return p
	}
	for _, pod := range static {
		if !mirrored[fullName(pod)] && running(pod) {
			p.create = append(p.create, mirrorOf(pod, node))
		}
	}
	slices.SortFunc(p.create, byFullName)
	slices.SortFunc(p.delete, byFullName)
	return p
}

// mirrorOf is upstream's CreateMirrorPod object: the static pod with the
// mirror annotation and the Node as its controlling owner, so the API
// server's garbage collector removes it with the Node.
func mirrorOf(pod *v1.Pod, node *v1.Node) *v1.Pod {
	m := pod.DeepCopy()
	m.ResourceVersion = ""
	m.Annotations[podspec.ConfigMirrorAnnotationKey] = hash(pod)
	controller := true
	m.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: v1.SchemeGroupVersion.String(),
		Kind:       "Node",
		Name:       node.Name,
		UID:        node.UID,
		Controller: &controller,
	}}
	return m
}

// hash is the static pod's config hash (its UID when it has none).
func hash(pod *v1.Pod) string {
	if h, ok := pod.Annotations[podspec.ConfigHashAnnotationKey]; ok {
		return h
	}
	return string(pod.UID)
}

func fullName(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

func byFullName(a, b *v1.Pod) int { return cmp.Compare(fullName(a), fullName(b)) }
