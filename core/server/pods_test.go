package server

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodsHandler(t *testing.T) {
	pods := []*v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "web-node", Namespace: "default", UID: "u1"}, Status: v1.PodStatus{Phase: v1.PodRunning}}}
	rec := httptest.NewRecorder()
	PodsHandler(func() []*v1.Pod { return pods }).ServeHTTP(rec, httptest.NewRequest("GET", "/pods", nil))
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	var list v1.PodList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "PodList" || list.APIVersion != "v1" || len(list.Items) != 1 ||
		list.Items[0].Name != "web-node" || list.Items[0].Kind != "Pod" || list.Items[0].Status.Phase != v1.PodRunning {
		t.Errorf("list: %+v", list)
	}
	if pods[0].Kind != "" {
		t.Error("the handler must not modify the pods it is given")
	}
}
