package apisource

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/microlet/microlet/core/cluster/apiclient"
	"github.com/microlet/microlet/core/pods/podsource"
	"github.com/microlet/microlet/core/pods/podspec"
)

func boundPod(name string, annotations map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Annotations: annotations},
		Spec: v1.PodSpec{NodeName: "node-a"}}
}

func next(t *testing.T, out <-chan podsource.Update) podsource.Update {
	t.Helper()
	select {
	case u := <-out:
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("no update from the source")
	}
	return podsource.Update{}
}

func podNames(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func TestSourceSendsFullSetsWithoutMirrorPods(t *testing.T) {
	client := fake.NewClientset(
		boundPod("web", nil),
		boundPod("etcd-node-a", map[string]string{podspec.ConfigMirrorAnnotationKey: "h1"}),
	)
	s := New(client, "node-a", func() bool { return true }, apiclient.NewOutage(hclog.NewNullLogger(), "watching"), hclog.NewNullLogger())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan podsource.Update)
	go s.Run(ctx, out)

	u := next(t, out)
	if u.Op != podsource.OpSet || !slices.Equal(podNames(u.Pods), []string{"web"}) {
		t.Fatalf("first update %s %v, want SET [web]", u.Op, podNames(u.Pods))
	}
	if !s.HasSynced() {
		t.Fatal("the first set came before the informer synced")
	}
	if _, err := s.Pods().Pods("default").Get("etcd-node-a"); err != nil {
		t.Fatalf("mirror pod not in the lister: %v", err)
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, boundPod("api", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		u = next(t, out)
		if u.Op != podsource.OpSet {
			t.Fatalf("update %s, want SET", u.Op)
		}
		if slices.Equal(podNames(u.Pods), []string{"api", "web"}) {
			return
		}
	}
}
