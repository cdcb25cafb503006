package mirrorpods

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/pods/podspec"
)

func staticPod(name, hash string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID(hash),
		Annotations: map[string]string{podspec.ConfigHashAnnotationKey: hash, podspec.ConfigSourceAnnotationKey: "file"}}}
}

func mirrorPod(name, hash string, deleting bool) *v1.Pod {
	m := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID("m-" + hash),
		Annotations: map[string]string{podspec.ConfigMirrorAnnotationKey: hash}}}
	if deleting {
		now := metav1.Now()
		m.DeletionTimestamp = &now
	}
	return m
}

func names(pods []*v1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name+"@"+p.Annotations[podspec.ConfigMirrorAnnotationKey])
	}
	return strings.Join(out, ",")
}

func TestPlanMirrors(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid"}}
	now := metav1.Now()
	deletedNode := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", DeletionTimestamp: &now}}
	all := func(*v1.Pod) bool { return true }
	tests := []struct {
		name                string
		static, mirrors     []*v1.Pod
		running             func(*v1.Pod) bool
		node                *v1.Node
		wantCreate, wantDel string
	}{
		{name: "missing mirror created", static: []*v1.Pod{staticPod("etcd", "h1")}, node: node, wantCreate: "etcd@h1"},
		{name: "mirror up to date", static: []*v1.Pod{staticPod("etcd", "h1")}, mirrors: []*v1.Pod{mirrorPod("etcd", "h1", false)}, node: node},
		{name: "static pod changed: replaced", static: []*v1.Pod{staticPod("etcd", "h2")}, mirrors: []*v1.Pod{mirrorPod("etcd", "h1", false)}, node: node,
			wantCreate: "etcd@h2", wantDel: "etcd@h1"},
		{name: "mirror deleted by a user: recreated", static: []*v1.Pod{staticPod("etcd", "h1")}, mirrors: []*v1.Pod{mirrorPod("etcd", "h1", true)}, node: node,
			wantCreate: "etcd@h1", wantDel: "etcd@h1"},
		{name: "static pod gone: mirror deleted", mirrors: []*v1.Pod{mirrorPod("etcd", "h1", false)}, node: node, wantDel: "etcd@h1"},
		{name: "Node unknown: nothing created", static: []*v1.Pod{staticPod("etcd", "h1")}},
		{name: "Node being deleted: nothing created", static: []*v1.Pod{staticPod("etcd", "h1")}, node: deletedNode},
		{name: "a static pod that does not run gets none", static: []*v1.Pod{staticPod("etcd", "h1")}, node: node,
			running: func(*v1.Pod) bool { return false }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			running := tt.running
			if running == nil {
				running = all
			}
			p := planMirrors(tt.static, running, tt.mirrors, tt.node)
			if got := names(p.create); got != tt.wantCreate {
				t.Errorf("create %q, want %q", got, tt.wantCreate)
			}
			if got := names(p.delete); got != tt.wantDel {
				t.Errorf("delete %q, want %q", got, tt.wantDel)
			}
		})
	}
}

func TestMirrorOf(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid"}}
	pod := staticPod("etcd", "h1")
	m := mirrorOf(pod, node)
	if m.Annotations[podspec.ConfigMirrorAnnotationKey] != "h1" || m.Annotations[podspec.ConfigSourceAnnotationKey] != "file" {
		t.Fatalf("annotations %v", m.Annotations)
	}
	if len(m.OwnerReferences) != 1 {
		t.Fatalf("owner references %v", m.OwnerReferences)
	}
	ref := m.OwnerReferences[0]
	if ref.Kind != "Node" || ref.APIVersion != "v1" || ref.Name != "node-a" || ref.UID != "node-uid" || ref.Controller == nil || !*ref.Controller {
		t.Fatalf("owner reference %+v", ref)
	}
	if _, ok := pod.Annotations[podspec.ConfigMirrorAnnotationKey]; ok {
		t.Fatal("the static pod was modified")
	}
}
