package podconfig

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/pods/podsource"
	"github.com/microlet/microlet/core/pods/podspec"
)

func pod(name, uid string, mutate ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "x:1"}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func image(img string) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.Containers[0].Image = img } }
func label(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Labels = map[string]string{k: v} }
}
func phase(ph v1.PodPhase) func(*v1.Pod) { return func(p *v1.Pod) { p.Status.Phase = ph } }
func deleting(p *v1.Pod) {
	now := metav1.NewTime(time.Unix(1000, 0))
	p.DeletionTimestamp = &now
}

func update(source string, op podsource.Op, pods ...*v1.Pod) podsource.Update {
	return podsource.Update{Source: source, Op: op, Pods: pods}
}

// describe renders pod updates as "OP source ns/name:uid,...".
func describe(updates []PodUpdate) []string {
	var out []string
	for _, u := range updates {
		names := make([]string, len(u.Pods))
		for i, p := range u.Pods {
			names[i] = fmt.Sprintf("%s/%s:%s", p.Namespace, p.Name, p.UID)
		}
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s", u.Op, u.Source, strings.Join(names, ","))))
	}
	return out
}

func TestMerge(t *testing.T) {
	type step struct {
		in   podsource.Update
		want []string
	}
	tests := []struct {
		name  string
		steps []step
		// wantRejected lists "source ns/name:uid" of rejected pods at the end.
		wantRejected []string
	}{
		{
			name: "an empty first set still says the source was read",
			steps: []step{
				{update("file", podsource.OpSet), []string{"ADD file"}},
				{update("file", podsource.OpSet), nil},
			},
		},
		{
			name: "pods come, stay and go",
			steps: []step{
				{update("file", podsource.OpSet, pod("a", "1"), pod("b", "2")), []string{"ADD file default/a:1,default/b:2"}},
				{update("file", podsource.OpSet, pod("a", "1"), pod("b", "2")), nil},
				{update("file", podsource.OpSet, pod("b", "2")), []string{"REMOVE file default/a:1"}},
			},
		},
		{
			name: "a changed static manifest is a new pod",
			steps: []step{
				{update("file", podsource.OpSet, pod("a", "1")), []string{"ADD file default/a:1"}},
				{update("file", podsource.OpSet, pod("a", "1b", image("x:2"))), []string{"REMOVE file default/a:1", "ADD file default/a:1b"}},
			},
		},
		{
			name: "updates, reconciles and graceful deletes keep the UID",
			steps: []step{
				{update("api", podsource.OpSet, pod("a", "1"), pod("b", "2"), pod("c", "3")), []string{"ADD api default/a:1,default/b:2,default/c:3"}},
				{update("api", podsource.OpSet, pod("a", "1", image("x:2")), pod("b", "2", phase(v1.PodRunning)), pod("c", "3", deleting)),
					[]string{"UPDATE api default/a:1", "DELETE api default/c:3", "RECONCILE api default/b:2"}},
				{update("api", podsource.OpUpdate, pod("a", "1", image("x:2"), label("tier", "web"))), []string{"UPDATE api default/a:1"}},
			},
		},
		{
			name: "incremental operations",
			steps: []step{
				{update("api", podsource.OpSet), []string{"ADD api"}},
				{update("api", podsource.OpAdd, pod("a", "1")), []string{"ADD api default/a:1"}},
				{update("api", podsource.OpUpdate, pod("b", "2")), []string{"ADD api default/b:2"}},
				{update("api", podsource.OpRemove, pod("a", "1"), pod("zz", "9")), []string{"REMOVE api default/a:1"}},
			},
		},
		{
			name: "a duplicate name in one source waits for the first",
			steps: []step{
				{update("file", podsource.OpSet, pod("a", "1"), pod("a", "2")), []string{"ADD file default/a:1"}},
				{update("file", podsource.OpSet, pod("a", "1"), pod("a", "2")), nil},
				{update("file", podsource.OpSet, pod("a", "2")), []string{"REMOVE file default/a:1", "ADD file default/a:2"}},
			},
		},
		{
			name: "a pod added under a running pod's name waits for it",
			steps: []step{
				{update("api", podsource.OpSet, pod("a", "1")), []string{"ADD api default/a:1"}},
				{update("api", podsource.OpAdd, pod("a", "2")), nil},
				{update("api", podsource.OpRemove, pod("a", "1")), []string{"REMOVE api default/a:1", "ADD api default/a:2"}},
			},
		},
		{
			name: "a name another source owns is rejected until that pod is gone",
			steps: []step{
				{update("file", podsource.OpSet, pod("a", "1"), pod("b", "2")), []string{"ADD file default/a:1,default/b:2"}},
				{update("push", podsource.OpSet, pod("a", "3"), pod("c", "4")), []string{"ADD push default/c:4"}},
				{update("push", podsource.OpSet, pod("a", "3")), []string{"REMOVE push default/c:4"}},
				{update("file", podsource.OpSet, pod("b", "2")), []string{"REMOVE file default/a:1", "ADD push default/a:3"}},
				// The file source offering it again now waits in turn.
				{update("file", podsource.OpSet, pod("a", "1"), pod("b", "2")), nil},
			},
			wantRejected: []string{"file default/a:1"},
		},
		{
			name: "the first set that only brings rejected pods says the source was read",
			steps: []step{
				{update("file", podsource.OpSet, pod("a", "1")), []string{"ADD file default/a:1"}},
				{update("push", podsource.OpSet, pod("a", "2")), []string{"ADD push"}},
			},
			wantRejected: []string{"push default/a:2"},
		},
		{
			name: "a rejected pod that leaves its source is forgotten",
			steps: []step{
				{update("file", podsource.OpSet, pod("a", "1")), []string{"ADD file default/a:1"}},
				{update("push", podsource.OpSet, pod("a", "2")), []string{"ADD push"}},
				{update("push", podsource.OpSet), nil},
				{update("file", podsource.OpSet), []string{"REMOVE file default/a:1"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(hclog.NewNullLogger(), time.Now, []string{"api", "file", "push"})
			for i, st := range tt.steps {
				got := describe(s.merge(st.in))
				if strings.Join(got, "\n") != strings.Join(st.want, "\n") {
					t.Fatalf("step %d (%s %s): got\n%s\nwant\n%s", i, st.in.Op, st.in.Source, strings.Join(got, "\n"), strings.Join(st.want, "\n"))
				}
			}
			var rejected []string
			for _, r := range s.rejected() {
				rejected = append(rejected, fmt.Sprintf("%s %s/%s:%s", r.Source, r.Pod.Namespace, r.Pod.Name, r.Pod.UID))
				if r.Reason == "" {
					t.Errorf("rejected pod %s/%s has no reason", r.Pod.Namespace, r.Pod.Name)
				}
			}
			if strings.Join(rejected, "\n") != strings.Join(tt.wantRejected, "\n") {
				t.Errorf("rejected\n%s\nwant\n%s", strings.Join(rejected, "\n"), strings.Join(tt.wantRejected, "\n"))
			}
		})
	}
}

func TestRejectionReasons(t *testing.T) {
	s := newStore(hclog.NewNullLogger(), time.Now, []string{"file", "push"})
	s.merge(update("file", podsource.OpSet, pod("a", "1"), pod("a", "2")))
	s.merge(update("push", podsource.OpSet, pod("a", "3")))
	var reasons []string
	for _, r := range s.rejected() {
		reasons = append(reasons, r.Source+": "+r.Reason)
	}
	want := []string{
		`file: duplicate pod name "default/a" in source "file": pod 1 already has it`,
		`push: pod name "default/a" is already taken by a pod from source "file" (UID 1); this pod runs once that one is gone`,
	}
	if strings.Join(reasons, "\n") != strings.Join(want, "\n") {
		t.Errorf("reasons\n%s\nwant\n%s", strings.Join(reasons, "\n"), strings.Join(want, "\n"))
	}
}

func TestLocalAnnotations(t *testing.T) {
	first := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	now := first
	s := newStore(hclog.NewNullLogger(), func() time.Time { return now }, []string{"file"})
	input := pod("a", "1")
	added := s.merge(update("file", podsource.OpSet, input))[0].Pods[0]
	if input.Annotations != nil {
		t.Error("merge changed the source's pod")
	}
	want := map[string]string{
		podspec.ConfigSourceAnnotationKey:    "file",
		podspec.ConfigFirstSeenAnnotationKey: first.Format(time.RFC3339Nano),
	}
	for k, v := range want {
		if added.Annotations[k] != v {
			t.Errorf("added pod: annotation %s=%q; want %q", k, added.Annotations[k], v)
		}
	}

	now = first.Add(time.Hour)
	updated := s.merge(update("file", podsource.OpSet, pod("a", "1", func(p *v1.Pod) {
		p.Annotations = map[string]string{"example.com/x": "y"}
	})))
	if got := describe(updated); len(got) != 1 || got[0] != "UPDATE file default/a:1" {
		t.Fatalf("got %v; want an UPDATE", got)
	}
	want["example.com/x"] = "y"
	for k, v := range want {
		if updated[0].Pods[0].Annotations[k] != v {
			t.Errorf("updated pod: annotation %s=%q; want %q", k, updated[0].Pods[0].Annotations[k], v)
		}
	}
}
