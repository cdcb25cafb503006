package mirrorpods

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/microlet/microlet/core/cluster/apiclient"
	"github.com/microlet/microlet/core/pods/podspec"
)

// TestManagerSync runs passes of the manager on a fake API server whose
// lister shows what the fake holds, as the informer would.
func TestManagerSync(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	refresh := func() {
		list, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		objs := make([]any, len(list.Items))
		for i := range list.Items {
			objs[i] = &list.Items[i]
		}
		if err := indexer.Replace(objs, ""); err != nil {
			t.Fatal(err)
		}
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid"}}
	static := []*v1.Pod{staticPod("etcd", "h1")}
	m := New(Options{Client: client, Pods: corelisters.NewPodLister(indexer), HasSynced: func() bool { return true },
		Node: func() *v1.Node { return node }, Desired: func() []*v1.Pod { return static }, Active: func() []*v1.Pod { return static },
		Outage: apiclient.NewOutage(hclog.NewNullLogger(), "updating mirror pods")})
	mirror := func() *v1.Pod {
		p, err := client.CoreV1().Pods("kube-system").Get(ctx, "etcd", metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return p
	}

	if err := m.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mirror(); got == nil || got.Annotations[podspec.ConfigMirrorAnnotationKey] != "h1" {
		t.Fatalf("mirror pod after the first pass: %v", got)
	}

	static = []*v1.Pod{staticPod("etcd", "h2")} // the manifest changed
	refresh()
	if err := m.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mirror(); got == nil || got.Annotations[podspec.ConfigMirrorAnnotationKey] != "h2" {
		t.Fatalf("mirror pod after the static pod changed: %v", got)
	}

	static = nil // the manifest is gone
	refresh()
	if err := m.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mirror(); got != nil {
		t.Fatalf("mirror pod left after its static pod went: %v", got.Annotations)
	}
}
