package nodeapi

import (
	"encoding/json"
	"net/http"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubelettypes "k8s.io/kubelet/pkg/types"
)

// pods serves /pods: the desired pods, each with its current status, as a
// v1 PodList.
func (h *handlers) pods() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writePodList(w, h.opts.Pods.PodsWithStatus())
	})
}

// runningPods serves /runningpods/: the pods the runtime runs (a ready
// sandbox or a running container), each with its running containers'
// names and images only, as upstream's Pod.ToAPIPod.
func (h *handlers) runningPods() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pods, err := h.runtimePods(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writePodList(w, pods)
	})
}

func (h *handlers) runtimePods(r *http.Request) ([]*v1.Pod, error) {
	ctx := r.Context()
	sandboxes, err := h.opts.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
	if err != nil {
		return nil, err
	}
	containers, err := h.opts.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		return nil, err
	}
	byUID := map[types.UID]*v1.Pod{}
	pod := func(labels map[string]string) *v1.Pod {
		uid := types.UID(labels[kubelettypes.KubernetesPodUIDLabel])
		if uid == "" {
			return nil // not a pod of a node agent
		}
		p, ok := byUID[uid]
		if !ok {
			p = &v1.Pod{}
			p.UID, p.Name, p.Namespace = uid, labels[kubelettypes.KubernetesPodNameLabel], labels[kubelettypes.KubernetesPodNamespaceLabel]
			byUID[uid] = p
		}
		return p
	}
	for _, s := range sandboxes {
		pod(s.Labels)
	}
	for _, c := range containers {
		if p := pod(c.Labels); p != nil {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c.GetMetadata().GetName(), Image: c.GetImage().GetImage()})
		}
	}
	out := make([]*v1.Pod, 0, len(byUID))
	for _, p := range byUID {
		sort.Slice(p.Spec.Containers, func(i, j int) bool { return p.Spec.Containers[i].Name < p.Spec.Containers[j].Name })
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// writePodList writes pods as a v1 PodList, the kubelet's encoding of
// /pods and /runningpods/.
func writePodList(w http.ResponseWriter, pods []*v1.Pod) {
	// Items is never null: clients range over it.
	list := v1.PodList{Items: []v1.Pod{}}
	list.Kind, list.APIVersion = "PodList", "v1"
	for _, p := range pods {
		pod := p.DeepCopy()
		pod.Kind, pod.APIVersion = "Pod", "v1"
		list.Items = append(list.Items, *pod)
	}
	body, err := json.Marshal(&list)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}
