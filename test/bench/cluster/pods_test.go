//go:build e2e

package clusterbench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/microlet/microlet/internal/devnode"
)

// batchTimeout bounds the wait for a batch's pods to run or to go.
const batchTimeout = 10 * time.Minute

// createWorkers is how many pods are created at once, as a controller's
// workers would.
const createWorkers = 10

// batch is a namespace of pods pinned to one node, and what an informer
// on the API server saw of them: when each was created (the create call
// sent), seen Running, deleted (the delete call sent) and seen gone.
type batch struct {
	client kubernetes.Interface
	ns     string
	node   string
	names  []string

	mu                              sync.Mutex
	created, running, deleted, gone map[string]time.Time
	changed                         chan struct{}
	stopWatch                       func()
}

// newBatch makes a namespace for count pods on node and starts watching it.
func newBatch(b *testing.B, client kubernetes.Interface, ns, node string, count int) *batch {
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	// Pods are admitted with their namespace's default service account,
	// which the controller-manager may not have made yet.
	_, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	bt := &batch{client: client, ns: ns, node: node, changed: make(chan struct{}, 1),
		created: map[string]time.Time{}, running: map[string]time.Time{}, deleted: map[string]time.Time{}, gone: map[string]time.Time{}}
	for i := range count {
		bt.names = append(bt.names, fmt.Sprintf("pod-%03d", i))
	}
	// An informer, as controllers watch: it lists, watches and watches
	// again when the API server ends a watch (as one just started may).
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	informer := factory.Core().V1().Pods().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { bt.observe(obj, false) },
		UpdateFunc: func(_, obj any) { bt.observe(obj, false) },
		DeleteFunc: func(obj any) { bt.observe(obj, true) },
	}); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	bt.stopWatch = sync.OnceFunc(func() { close(stop) })
	b.Cleanup(bt.stopWatch)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	return bt
}

// observe records when a pod is first seen Running and when it is gone.
func (bt *batch) observe(obj any, deleted bool) {
	now := time.Now()
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	bt.mu.Lock()
	switch {
	case deleted:
		bt.gone[pod.Name] = now
	case pod.Status.Phase == v1.PodRunning && bt.running[pod.Name].IsZero():
		bt.running[pod.Name] = now
	}
	bt.mu.Unlock()
	select {
	case bt.changed <- struct{}{}:
	default:
	}
}

// pod is a batch's pod: the pause image (on every devnode already, so no
// pull is timed), no service account token, pinned to the node by name.
func (bt *batch) pod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: bt.ns},
		Spec: v1.PodSpec{
			NodeName:                     bt.node,
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []v1.Container{{Name: "pause", Image: devnode.DefaultPauseImage}},
		},
	}
}

// create creates the batch's pods and waits until every one is Running.
func (bt *batch) create(b *testing.B) {
	bt.each(b, func(ctx context.Context, name string) error {
		bt.mark(bt.created, name)
		_, err := bt.client.CoreV1().Pods(bt.ns).Create(ctx, bt.pod(name), metav1.CreateOptions{})
		return err
	})
	bt.wait(b, "Running", bt.running)
}

// remove deletes the batch's pods (their default grace; pause ends at
// SIGTERM) and waits until every one has left the API.
func (bt *batch) remove(b *testing.B) {
	bt.each(b, func(ctx context.Context, name string) error {
		bt.mark(bt.deleted, name)
		return bt.client.CoreV1().Pods(bt.ns).Delete(ctx, name, metav1.DeleteOptions{})
	})
	bt.wait(b, "gone", bt.gone)
	bt.stopWatch()
}

// each runs do for every pod, createWorkers at a time.
func (bt *batch) each(b *testing.B, do func(context.Context, string) error) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	names := make(chan string)
	errs := make(chan error, len(bt.names))
	var wg sync.WaitGroup
	for range createWorkers {
		wg.Go(func() {
			for name := range names {
				errs <- do(ctx, name)
			}
		})
	}
	for _, name := range bt.names {
		names <- name
	}
	close(names)
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		b.Fatalf("namespace %s: %v", bt.ns, err)
	}
}

func (bt *batch) mark(m map[string]time.Time, name string) {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	m[name] = time.Now()
}

// wait waits until seen has every pod.
func (bt *batch) wait(b *testing.B, what string, seen map[string]time.Time) {
	deadline := time.After(batchTimeout)
	for {
		bt.mu.Lock()
		n := len(seen)
		bt.mu.Unlock()
		if n == len(bt.names) {
			return
		}
		select {
		case <-bt.changed:
		case <-time.After(time.Second):
		case <-deadline:
			b.Fatalf("namespace %s: %d of %d pods %s after %v", bt.ns, n, len(bt.names), what, batchTimeout)
		}
	}
}

// latencies are, per pod, the time from from to to.
func (bt *batch) latencies(from, to map[string]time.Time) []time.Duration {
	bt.mu.Lock()
	defer bt.mu.Unlock()
	var out []time.Duration
	for _, name := range bt.names {
		out = append(out, to[name].Sub(from[name]))
	}
	return out
}

// percentile is the nearest-rank percentile p (0 < p <= 100) of samples.
func percentile(samples []time.Duration, p int) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := (p*len(s) + 99) / 100
	return s[max(rank, 1)-1]
}
