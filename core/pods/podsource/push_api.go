package podsource

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/microlet/microlet/core/pods/podspec"
)

func (p *Push) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pods", p.list)
	mux.HandleFunc("POST /pods", p.add)
	mux.HandleFunc("PUT /pods", p.replace)
	mux.HandleFunc("DELETE /pods/{namespace}/{name}", p.remove)
	return mux
}

// rejection is a pushed pod that cannot run, and why.
type rejection struct {
	name string
	err  error
}

func (p *Push) list(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	pods := p.pods.running()
	p.mu.Unlock()
	writePodList(w, pods)
}

// add adds or replaces the pods of a Pod or PodList. Pods that cannot run
// are rejected with 400 and their reasons; the others are applied.
func (p *Push) add(w http.ResponseWriter, r *http.Request) {
	m, ok := p.readManifest(w, r)
	if !ok {
		return
	}
	accepted, rejected := p.prepare(m)
	p.mu.Lock()
	defer p.mu.Unlock()
	next := p.pods.clone()
	for _, pp := range accepted {
		next[pp.key] = pp
	}
	p.finish(w, next, accepted, rejected)
}

// replace makes a PodList the whole pushed set. A pod that cannot run is
// rejected with 400; if it replaces a pushed pod, that pod's current
// version stays, as a broken static pod file keeps its last good pod.
func (p *Push) replace(w http.ResponseWriter, r *http.Request) {
	m, ok := p.readManifest(w, r)
	if !ok {
		return
	}
	if !m.IsList() {
		writeStatus(w, apierrors.NewBadRequest("PUT /pods replaces all pushed pods and takes a PodList; use POST /pods to add or replace one Pod"))
		return
	}
	accepted, rejected := p.prepare(m)
	p.mu.Lock()
	defer p.mu.Unlock()
	next := pushedPods{}
	for _, pp := range accepted {
		next[pp.key] = pp
	}
	for _, rj := range rejected {
		if current, ok := p.pods[rj.name]; ok {
			next[rj.name] = current
		}
	}
	p.finish(w, next, accepted, rejected)
}

// remove deletes one pod, named as pushed or as it runs (with the node
// name suffix).
func (p *Push) remove(w http.ResponseWriter, r *http.Request) {
	namespace, name := r.PathValue("namespace"), r.PathValue("name")
	p.mu.Lock()
	defer p.mu.Unlock()
	key := namespace + "/" + name
	if _, ok := p.pods[key]; !ok {
		key = ""
		for k, pp := range p.pods {
			if pp.pod.Namespace == namespace && pp.pod.Name == name {
				key = k
			}
		}
	}
	if key == "" {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, namespace+"/"+name))
		return
	}
	next := p.pods.clone()
	delete(next, key)
	if err := p.commit(next); err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	p.log.Info("pushed pod removed", "pod", key)
	writeJSON(w, http.StatusOK, &metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusSuccess,
		Code:     http.StatusOK,
		Message:  fmt.Sprintf("pod %q removed", key),
		Details:  &metav1.StatusDetails{Name: key, Kind: "pods"},
	})
}

// readManifest reads and decodes a request body, answering 413 or 400 if it
// cannot.
func (p *Push) readManifest(w http.ResponseWriter, r *http.Request) (*podspec.Manifest, bool) {
	body, err := podspec.ReadManifest(http.MaxBytesReader(w, r.Body, podspec.MaxManifestBytes+1))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.Is(err, podspec.ErrManifestTooLarge) || errors.As(err, &tooLarge):
		writeStatus(w, apierrors.NewRequestEntityTooLargeError(podspec.ErrManifestTooLarge.Error()))
		return nil, false
	case err != nil:
		writeStatus(w, apierrors.NewBadRequest("reading the request body: "+err.Error()))
		return nil, false
	}
	m, err := podspec.DecodePodOrList(body)
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest(err.Error()))
		return nil, false
	}
	if len(m.Warnings) > 0 {
		// As the API server does for fields it drops.
		for _, warning := range m.Warnings {
			w.Header().Add("Warning", fmt.Sprintf("299 - %q", warning.String()))
		}
	}
	return m, true
}

// prepare readies the manifest's pods to run; a pod named twice is rejected
// the second time.
func (p *Push) prepare(m *podspec.Manifest) (accepted []*pushedPod, rejected []rejection) {
	seen := map[string]bool{}
	origin := podspec.PushOrigin(p.cfg.NodeName)
	for i, raw := range m.Pods {
		key := pushKey(raw)
		if seen[key] {
			path := field.NewPath("items").Index(i).Child("metadata", "name")
			rejected = append(rejected, rejection{name: key, err: &podspec.ManifestError{Problems: []podspec.Problem{{
				Field: path.String(), Type: field.ErrorTypeDuplicate, Detail: fmt.Sprintf("Duplicate value: %q: the request names this pod twice", raw.Name),
			}}}})
			continue
		}
		seen[key] = true
		pod, err := m.Prepare(i, origin)
		if err != nil {
			rejected = append(rejected, rejection{name: key, err: err})
			continue
		}
		accepted = append(accepted, &pushedPod{key: key, raw: raw, pod: pod})
	}
	return accepted, rejected
}

// finish commits next and answers: the applied pods with 200, or 400 with
// what was rejected and why. The caller holds p.mu.
func (p *Push) finish(w http.ResponseWriter, next pushedPods, accepted []*pushedPod, rejected []rejection) {
	if err := p.commit(next); err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	applied := make([]*v1.Pod, len(accepted))
	names := make([]string, len(accepted))
	for i, pp := range accepted {
		applied[i] = pp.pod.DeepCopy()
		names[i] = pp.key
	}
	if len(accepted) > 0 {
		p.log.Info("pods pushed", "pods", strings.Join(names, ", "))
	}
	if len(rejected) == 0 {
		writePodList(w, applied)
		return
	}
	writeStatus(w, rejectedStatus(names, rejected))
}

// rejectedStatus is the 400 answer for rejected pods, with one cause per
// problem, as the API server reports an invalid object.
func rejectedStatus(applied []string, rejected []rejection) *apierrors.StatusError {
	var causes []metav1.StatusCause
	reasons := make([]string, len(rejected))
	for i, rj := range rejected {
		reasons[i] = fmt.Sprintf("%s: %v", rj.name, rj.err)
		var merr *podspec.ManifestError
		if !errors.As(rj.err, &merr) {
			causes = append(causes, metav1.StatusCause{Message: rj.err.Error()})
			continue
		}
		for _, problem := range merr.Problems {
			causes = append(causes, metav1.StatusCause{Type: metav1.CauseType(problem.Type), Field: problem.Field, Message: problem.Detail})
		}
	}
	msg := fmt.Sprintf("%d pod(s) rejected: %s", len(rejected), strings.Join(reasons, "; "))
	if len(applied) > 0 {
		msg += fmt.Sprintf(". Applied: %s", strings.Join(applied, ", "))
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusBadRequest,
		Reason:  metav1.StatusReasonInvalid,
		Message: msg,
		Details: &metav1.StatusDetails{Kind: "pods", Causes: causes},
	}}
}

func writePodList(w http.ResponseWriter, pods []*v1.Pod) {
	list := v1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: make([]v1.Pod, len(pods))}
	for i, pod := range pods {
		list.Items[i] = *pod
	}
	writeJSON(w, http.StatusOK, &list)
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	status := err.Status()
	status.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	writeJSON(w, int(status.Code), &status)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
