package server

import (
	"encoding/json"
	"net/http"

	v1 "k8s.io/api/core/v1"
)

// PodsHandler serves the node's pods, each with its current status, as a
// v1 PodList: the shape of the kubelet's /pods.
func PodsHandler(pods func() []*v1.Pod) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Items is never null: clients range over it.
		list := v1.PodList{Items: []v1.Pod{}}
		list.Kind, list.APIVersion = "PodList", "v1"
		for _, p := range pods() {
			pod := p.DeepCopy()
			pod.Kind, pod.APIVersion = "Pod", "v1"
			list.Items = append(list.Items, *pod)
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(&list); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
}
