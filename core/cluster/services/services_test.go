package services

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/microlet/microlet/core/cluster/apiclient"
)

func svc(ns, name string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"big": "label"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"}},
		Spec: v1.ServiceSpec{ClusterIP: "10.0.0.3", Selector: map[string]string{"app": name},
			Ports: []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, NodePort: 30080}}},
	}
}

// TestListKeepsWhatVariablesNeed: List gives the Services of the namespace
// and of default, each slimmed to what its variables are made of.
func TestListKeepsWhatVariablesNeed(t *testing.T) {
	client := fake.NewClientset(svc("default", "kubernetes"), svc("app", "db"), svc("other", "web"))
	i := New(client, apiclient.NewOutage(hclog.NewNullLogger(), "watching"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go i.Run(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for !i.HasSynced() {
		if time.Now().After(deadline) {
			t.Fatal("the informer never synced")
		}
		time.Sleep(10 * time.Millisecond)
	}
	names := func(ns string) []string {
		var out []string
		for _, s := range i.List(ns) {
			out = append(out, s.Namespace+"/"+s.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"default/kubernetes", "app/db"}, names("app")); diff != "" {
		t.Errorf("List(app) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"default/kubernetes"}, names("default")); diff != "" {
		t.Errorf("List(default) (-want +got):\n%s", diff)
	}
	got := i.List("default")[0]
	want := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		Spec: v1.ServiceSpec{ClusterIP: "10.0.0.3", Ports: []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the kept Service (-want +got):\n%s", diff)
	}
}
