// Package volumesources reads what a pod's configMap, secret and projected
// volumes show, and the configMaps and secrets its containers' environment
// names, from the API server, for podruntime's VolumeSources. As upstream's
// default change-detection strategy (Watch), each object read is watched
// on its own (a list and watch selected by its name, which the Node
// authorizer allows for the objects of the node's pods), so a read answers
// from memory and an update reaches the pod's files at its next sync; a
// watch no pod sync used for a while is stopped, and an immutable object's
// once it was read.
package volumesources

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/microlet/microlet/core/cluster/apiclient"
)

// DefaultIdle is how long a watch no read used is kept: twice the
// kubelet's default sync period, so that a pod's periodic syncs keep the
// watches of its objects.
const DefaultIdle = 2 * time.Minute

// syncTimeout is how long a read waits for a new watch's first list, as
// upstream's watch-based manager: past it the read fails (a FailedMount or
// CreateContainerConfigError) and the next sync tries again, the watch
// going on meanwhile.
const syncTimeout = time.Second

// Sources reads configMaps and secrets and requests tokens for the node's
// pods. It is safe for concurrent use.
type Sources struct {
	client kubernetes.Interface
	idle   time.Duration
	now    func() time.Time

	mu      sync.Mutex
	watches map[objectKey]*objectWatch
	tokens  *tokenCache
}

type objectKey struct {
	resource        schema.GroupResource
	namespace, name string
}

// objectWatch is one object's informer and when a read last used it.
type objectWatch struct {
	informer cache.SharedIndexInformer
	stop     chan struct{}
	lastUsed time.Time
	// stopped: the object is immutable, or the watch went idle.
	stopped bool
}

// New makes Sources on client; idle 0 is DefaultIdle, now nil is
// time.Now.
func New(client kubernetes.Interface, idle time.Duration, now func() time.Time) *Sources {
	if idle == 0 {
		idle = DefaultIdle
	}
	if now == nil {
		now = time.Now
	}
	return &Sources{client: client, idle: idle, now: now, watches: map[objectKey]*objectWatch{}, tokens: newTokenCache(now)}
}

// GetConfigMap reads namespace/name.
func (s *Sources) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	obj, err := s.get(ctx, objectKey{v1.Resource("configmaps"), namespace, name}, &v1.ConfigMap{},
		byName(s.client.CoreV1().ConfigMaps(namespace), name))
	if err != nil {
		return nil, err
	}
	return obj.(*v1.ConfigMap), nil
}

// GetSecret reads namespace/name.
func (s *Sources) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	obj, err := s.get(ctx, objectKey{v1.Resource("secrets"), namespace, name}, &v1.Secret{},
		byName(s.client.CoreV1().Secrets(namespace), name))
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Secret), nil
}

// byName lists and watches the one object of c named name.
func byName[L runtime.Object](c apiclient.ListWatcher[L], name string) *cache.ListWatch {
	// Not an outage: a refused list is likely the authorizer not knowing
	// the object's pod yet (see startWatch).
	return apiclient.FieldSelected(c, "metadata.name", name, nil)
}

// get answers from the object's watch, started on the first read with lw.
func (s *Sources) get(ctx context.Context, key objectKey, example runtime.Object, lw *cache.ListWatch) (runtime.Object, error) {
	s.mu.Lock()
	w, ok := s.watches[key]
	if !ok {
		w = s.startWatch(key, example, lw)
	}
	w.lastUsed = s.now()
	s.mu.Unlock()

	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, syncTimeout, true, func(context.Context) (bool, error) {
		return w.informer.HasSynced(), nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to sync %s cache: %w", key.resource, err)
	}
	obj, exists, err := w.informer.GetStore().GetByKey(key.namespace + "/" + key.name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(key.resource, key.name)
	}
	if immutable(obj) {
		// As upstream: it cannot change, so the watch is not needed; the
		// store keeps the object for later reads.
		s.mu.Lock()
		s.stopWatch(w)
		s.mu.Unlock()
	}
	return obj.(runtime.Object), nil
}

// startWatch starts the watch of one object, with a timer that stops it
// once idle. Callers hold s.mu.
func (s *Sources) startWatch(key objectKey, example runtime.Object, lw *cache.ListWatch) *objectWatch {
	w := &objectWatch{informer: cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{}), stop: make(chan struct{})}
	// A refused list (the object's pod not known to the authorizer yet, or
	// gone) is retried with the reflector's backoff; reads meanwhile fail.
	_ = w.informer.SetWatchErrorHandlerWithContext(func(context.Context, *cache.Reflector, error) {})
	s.watches[key] = w
	go w.informer.Run(w.stop)
	var expire func()
	expire = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if left := s.idle - s.now().Sub(w.lastUsed); left > 0 {
			time.AfterFunc(left, expire)
			return
		}
		s.stopWatch(w)
		if s.watches[key] == w {
			delete(s.watches, key)
		}
	}
	time.AfterFunc(s.idle, expire)
	return w
}

// stopWatch stops w's informer once. Callers hold s.mu.
func (s *Sources) stopWatch(w *objectWatch) {
	if !w.stopped {
		w.stopped = true
		close(w.stop)
	}
}

func immutable(obj any) bool {
	switch o := obj.(type) {
	case *v1.ConfigMap:
		return o.Immutable != nil && *o.Immutable
	case *v1.Secret:
		return o.Immutable != nil && *o.Immutable
	}
	return false
}

// RequestToken is a token of the pod's service account bound to the pod,
// through the TokenRequest API, reused until it must be renewed.
func (s *Sources) RequestToken(ctx context.Context, pod *v1.Pod, audience string, expirationSeconds *int64) (string, error) {
	return s.tokens.get(ctx, s.client, pod, audience, expirationSeconds)
}
