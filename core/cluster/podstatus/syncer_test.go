package podstatus

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/microlet/microlet/core/cluster/apiclient"
	"github.com/microlet/microlet/core/pods/podspec"
	"github.com/microlet/microlet/core/pods/status"
)

// syncerFixture is a syncer on a fake API server whose lister shows what
// the fake holds.
type syncerFixture struct {
	t        *testing.T
	client   *fake.Clientset
	indexer  cache.Indexer
	syncer   *Syncer
	couldRun map[types.UID]bool
}

func newSyncerFixture(t *testing.T, pods ...*v1.Pod) *syncerFixture {
	f := &syncerFixture{t: t, client: fake.NewClientset(), couldRun: map[types.UID]bool{},
		indexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})}
	for _, p := range pods {
		if _, err := f.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.refresh()
	f.syncer = New(Options{Client: f.client, Pods: corelisters.NewPodLister(f.indexer), HasSynced: func() bool { return true },
		CouldHaveRunningContainers: func(uid types.UID) bool { return f.couldRun[uid] },
		Outage:                     apiclient.NewOutage(hclog.NewNullLogger(), "writing pod statuses")})
	return f
}

// refresh makes the lister show the fake's pods, as the informer would.
func (f *syncerFixture) refresh() {
	list, err := f.client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	objs := make([]any, len(list.Items))
	for i := range list.Items {
		objs[i] = &list.Items[i]
	}
	if err := f.indexer.Replace(objs, ""); err != nil {
		f.t.Fatal(err)
	}
}

func (f *syncerFixture) get(name string) (*v1.Pod, bool) {
	p, err := f.client.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
	return p, err == nil
}

func (f *syncerFixture) writes() int {
	n := 0
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "patch" || a.GetVerb() == "delete" {
			n++
		}
	}
	return n
}

func pod(name string, uid types.UID) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid}, Status: v1.PodStatus{Phase: v1.PodPending}}
}

func versioned(p *v1.Pod, version uint64, st v1.PodStatus) status.VersionedPodStatus {
	return status.VersionedPodStatus{UID: p.UID, Name: p.Name, Namespace: p.Namespace, Version: version, Status: st}
}

func TestSyncerWritesOnlyNewVersions(t *testing.T) {
	web := pod("web", "u1")
	f := newSyncerFixture(t, web)
	running := v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.5"}
	f.syncer.syncBatch(context.Background(), []status.VersionedPodStatus{versioned(web, 1, running)})
	got, _ := f.get("web")
	if got.Status.Phase != v1.PodRunning || got.Status.PodIP != "10.0.0.5" {
		t.Fatalf("API status %+v, want Running with the IP", got.Status)
	}
	f.refresh()
	writes := f.writes()
	f.syncer.syncBatch(context.Background(), []status.VersionedPodStatus{versioned(web, 1, running)})
	if f.writes() != writes {
		t.Fatalf("an unchanged status was written again")
	}
}

func TestSyncerReconcilesAStatusTheAPILost(t *testing.T) {
	web := pod("web", "u1")
	web.Status = v1.PodStatus{Phase: v1.PodRunning}
	f := newSyncerFixture(t, web)
	// After a restart the node's first version equals what the API has:
	// no write.
	f.syncer.syncBatch(context.Background(), []status.VersionedPodStatus{versioned(web, 1, v1.PodStatus{Phase: v1.PodRunning})})
	if f.writes() != 0 {
		t.Fatalf("wrote a status the API already had")
	}
	// Someone else rewrites the status (an API server restored from an
	// old backup, say): the next pass puts the node's back.
	stale, _ := f.get("web")
	stale.Status.Phase = v1.PodPending
	stale.ResourceVersion = "7" // the fake keeps what it is given
	if _, err := f.client.CoreV1().Pods("ns").UpdateStatus(context.Background(), stale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	f.syncer.syncBatch(context.Background(), []status.VersionedPodStatus{versioned(web, 1, v1.PodStatus{Phase: v1.PodRunning})})
	if got, _ := f.get("web"); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s after reconcile, want Running", got.Status.Phase)
	}
}

func TestSyncerWritesAMirrorPodsStatus(t *testing.T) {
	mirror := pod("etcd-node", "mirror-uid")
	mirror.Annotations = map[string]string{podspec.ConfigMirrorAnnotationKey: "static-uid"}
	f := newSyncerFixture(t, mirror)
	static := versioned(mirror, 3, v1.PodStatus{Phase: v1.PodRunning})
	static.UID = "static-uid"
	f.syncer.syncBatch(context.Background(), []status.VersionedPodStatus{static})
	if got, _ := f.get("etcd-node"); got.Status.Phase != v1.PodRunning {
		t.Fatalf("mirror pod phase %s, want the static pod's Running", got.Status.Phase)
	}
}

func TestSyncerDeletesAFinishedPodBeingDeleted(t *testing.T) {
	web := pod("web", "u1")
	now := metav1.Now()
	web.DeletionTimestamp = &now
	web.Finalizers = nil
	f := newSyncerFixture(t, web)
	f.couldRun["u1"] = true
	st := versioned(web, 2, v1.PodStatus{Phase: v1.PodFailed})
	f.syncer.syncBatch(context.Background(), []status.VersionedPodStatus{st})
	if got, ok := f.get("web"); !ok || got.Status.Phase != v1.PodPending {
		t.Fatalf("pod with containers maybe running: got %v (exists %v), want it kept and not yet Failed", got, ok)
	}
	f.couldRun["u1"] = false
	st.Version, st.PodIsFinished = 3, true
	f.syncer.syncBatch(context.Background(), []status.VersionedPodStatus{st})
	if _, ok := f.get("web"); ok {
		t.Fatalf("finished pod still in the API")
	}
	for _, a := range f.client.Actions() {
		if d, ok := a.(interface {
			GetDeleteOptions() metav1.DeleteOptions
		}); ok && a.GetVerb() == "delete" {
			opts := d.GetDeleteOptions()
			if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 || opts.Preconditions == nil || *opts.Preconditions.UID != "u1" {
				t.Fatalf("delete options %+v, want grace 0 and the UID precondition", opts)
			}
		}
	}
}

func TestSyncerSkipsAPodRecreatedUnderItsName(t *testing.T) {
	web := pod("web", "u2")
	f := newSyncerFixture(t, web)
	old := pod("web", "u1")
	f.syncer.syncBatch(context.Background(), []status.VersionedPodStatus{versioned(old, 1, v1.PodStatus{Phase: v1.PodFailed})})
	if f.writes() != 0 {
		t.Fatalf("wrote the old pod's status to its successor")
	}
}

func TestSyncerRetriesAfterTheAPIServerFailed(t *testing.T) {
	web := pod("web", "u1")
	f := newSyncerFixture(t, web)
	down := true
	f.client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if down {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	st := []status.VersionedPodStatus{versioned(web, 1, v1.PodStatus{Phase: v1.PodRunning})}
	if err := f.syncer.syncBatch(context.Background(), st); err == nil {
		t.Fatal("no error while the API server is down")
	}
	down = false
	if err := f.syncer.syncBatch(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.get("web"); got.Status.Phase != v1.PodRunning {
		t.Fatalf("phase %s once the API server is back, want Running", got.Status.Phase)
	}
}

func TestSyncerWritesSeveralPodsAtOnce(t *testing.T) {
	// The API server answers a status patch only once two are in flight:
	// a syncer writing one pod at a time gets errors.
	var (
		mu       sync.Mutex
		inFlight int
		both     = make(chan struct{})
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/ns/pods/")
		if r.Method != http.MethodPatch || !ok {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		if inFlight++; inFlight == 2 {
			close(both)
		}
		mu.Unlock()
		select {
		case <-both:
		case <-time.After(5 * time.Second):
			http.Error(w, "no other write came while this one waited", http.StatusServiceUnavailable)
			return
		}
		name = strings.TrimSuffix(name, "/status")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), ResourceVersion: "2"}})
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	web, db := pod("web", "web"), pod("db", "db")
	for _, p := range []*v1.Pod{web, db} {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	s := New(Options{Client: client, Pods: corelisters.NewPodLister(indexer), HasSynced: func() bool { return true },
		CouldHaveRunningContainers: func(types.UID) bool { return true },
		Outage:                     apiclient.NewOutage(hclog.NewNullLogger(), "writing pod statuses")})
	running := v1.PodStatus{Phase: v1.PodRunning}
	if err := s.syncBatch(context.Background(), []status.VersionedPodStatus{versioned(web, 1, running), versioned(db, 1, running)}); err != nil {
		t.Fatalf("syncBatch: %v", err)
	}
	for _, p := range []*v1.Pod{web, db} {
		if w, ok := s.lastWritten(p.UID); !ok || w.version != 1 || w.resourceVersion != "2" {
			t.Errorf("pod %s: written %+v, %t; want version 1 at resourceVersion 2", p.Name, w, ok)
		}
	}
}
