package volumesources

import (
	"context"
	"fmt"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// TestObjectsAreWatched: reads answer from each object's watch, so an
// update or a creation is seen without a new GET; a missing object is
// NotFound; a watch no read used for the idle time stops, an immutable
// object's once read.
func TestObjectsAreWatched(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"k": "1"}})
	s := New(client, 200*time.Millisecond, nil)
	read := func() string {
		t.Helper()
		cm, err := s.GetConfigMap(ctx, "ns", "cfg")
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data["k"]
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
		}
	}
	if got := read(); got != "1" {
		t.Fatalf("k = %q, want 1", got)
	}
	cm, _ := client.CoreV1().ConfigMaps("ns").Get(ctx, "cfg", metav1.GetOptions{})
	cm.Data["k"] = "2"
	if _, err := client.CoreV1().ConfigMaps("ns").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the update read", func() bool { return read() == "2" })
	if _, err := s.GetSecret(ctx, "ns", "late"); !apierrors.IsNotFound(err) {
		t.Errorf("GetSecret of a missing secret = %v, want NotFound", err)
	}
	if _, err := client.CoreV1().Secrets("ns").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "late"},
		Immutable: ptr(true), Data: map[string][]byte{"p": []byte("x")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the created secret read", func() bool {
		sec, err := s.GetSecret(ctx, "ns", "late")
		return err == nil && string(sec.Data["p"]) == "x"
	})
	watching := func(name string) (on, stopped bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for k, w := range s.watches {
			if k.name == name {
				return true, w.stopped
			}
		}
		return false, false
	}
	if on, stopped := watching("late"); !on || !stopped {
		t.Errorf("the immutable secret's watch: kept %v, stopped %v; want kept and stopped", on, stopped)
	}
	eventually("the idle watches gone", func() bool {
		cfg, _ := watching("cfg")
		late, _ := watching("late")
		return !cfg && !late
	})
	if got := read(); got != "2" {
		t.Errorf("k = %q read again after the watch stopped, want 2", got)
	}
}

func ptr[T any](v T) *T { return &v }

func TestTokensAreBoundAndRenewed(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	clk := &clock{t: time.Unix(1000, 0)}
	var requests []*authenticationv1.TokenRequest
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		req := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		requests = append(requests, req)
		exp := int64(3600)
		if req.Spec.ExpirationSeconds != nil {
			exp = *req.Spec.ExpirationSeconds
		}
		req.Spec.ExpirationSeconds = &exp
		req.Status = authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("token-%d", len(requests)),
			ExpirationTimestamp: metav1.NewTime(clk.t.Add(time.Duration(exp) * time.Second))}
		return true, req, nil
	})
	s := New(client, 0, clk.now)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}, Spec: v1.PodSpec{ServiceAccountName: "default"}}
	exp := int64(1000)
	get := func() string {
		t.Helper()
		tok, err := s.RequestToken(ctx, pod, "vault", &exp)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	steps := []struct {
		advance time.Duration
		want    string
	}{
		{0, "token-1"},
		{799 * time.Second, "token-1"}, // before 80% of its life
		{1 * time.Second, "token-2"},   // at 80%
		{100 * time.Second, "token-2"},
	}
	for i, st := range steps {
		clk.t = clk.t.Add(st.advance)
		if got := get(); got != st.want {
			t.Errorf("step %d: token %q, want %q", i, got, st.want)
		}
	}
	r := requests[0]
	if ref := r.Spec.BoundObjectRef; ref == nil || ref.Kind != "Pod" || ref.Name != "p" || ref.UID != "u1" {
		t.Errorf("bound object %+v, want the pod", ref)
	}
	if len(r.Spec.Audiences) != 1 || r.Spec.Audiences[0] != "vault" || *r.Spec.ExpirationSeconds != 1000 {
		t.Errorf("request %+v, want audience vault and 1000 s", r.Spec)
	}
}

func TestTokenRenewalAfterADay(t *testing.T) {
	issued := time.Unix(0, 0)
	tok := cachedToken{issued: issued, exp: issued.Add(10 * 24 * time.Hour)}
	if tok.needsRenewal(issued.Add(24*time.Hour - time.Second)) {
		t.Error("renewal before a day and 80% of the life")
	}
	if !tok.needsRenewal(issued.Add(24 * time.Hour)) {
		t.Error("no renewal after a day")
	}
}
