// Package volumesources reads what a pod's configMap, secret and projected
// volumes show from the API server, for podruntime's VolumeSources: the
// node may read only the objects of pods bound to it (the Node authorizer),
// so it GETs each object, cached for a short TTL, rather than watching
// all of them. Upstream's default change-detection strategy is Watch; a
// GET per pod sync with a TTL cache is its older "Cache" strategy, and
// gets updates to the files within the sync period plus the TTL.
package volumesources

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DefaultObjectTTL is how long a configMap or secret read is reused:
// several pods mounting one object cost one GET per TTL.
const DefaultObjectTTL = 10 * time.Second

// Sources reads configMaps and secrets and requests tokens for the node's
// pods. It is safe for concurrent use.
type Sources struct {
	client kubernetes.Interface
	ttl    time.Duration
	now    func() time.Time

	mu      sync.Mutex
	objects map[objectKey]cachedObject
	tokens  *tokenCache
}

type objectKey struct{ kind, namespace, name string }

// cachedObject is a GET's answer, the object or NotFound, and when it was
// read.
type cachedObject struct {
	obj  any
	err  error
	read time.Time
}

// New makes Sources on client; ttl 0 is DefaultObjectTTL, now nil is
// time.Now.
func New(client kubernetes.Interface, ttl time.Duration, now func() time.Time) *Sources {
	if ttl == 0 {
		ttl = DefaultObjectTTL
	}
	if now == nil {
		now = time.Now
	}
	return &Sources{client: client, ttl: ttl, now: now, objects: map[objectKey]cachedObject{}, tokens: newTokenCache(now)}
}

// GetConfigMap reads namespace/name.
func (s *Sources) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	obj, err := s.get(objectKey{"configmap", namespace, name}, func() (any, error) {
		return s.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.ConfigMap), nil
}

// GetSecret reads namespace/name.
func (s *Sources) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	obj, err := s.get(objectKey{"secret", namespace, name}, func() (any, error) {
		return s.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Secret), nil
}

// get answers from the cache while its entry is younger than the TTL, else
// reads. Entries older than the TTL are dropped on the way, so objects no
// pod mounts any more do not stay.
func (s *Sources) get(key objectKey, read func() (any, error)) (any, error) {
	now := s.now()
	s.mu.Lock()
	for k, c := range s.objects {
		if now.Sub(c.read) >= s.ttl {
			delete(s.objects, k)
		}
	}
	c, ok := s.objects[key]
	s.mu.Unlock()
	if ok {
		return c.obj, c.err
	}
	obj, err := read()
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err // a refusal or an outage may pass: not cached
	}
	s.mu.Lock()
	s.objects[key] = cachedObject{obj: obj, err: err, read: now}
	s.mu.Unlock()
	return obj, err
}

// RequestToken is a token of the pod's service account bound to the pod,
// through the TokenRequest API, reused until it must be renewed.
func (s *Sources) RequestToken(ctx context.Context, pod *v1.Pod, audience string, expirationSeconds *int64) (string, error) {
	return s.tokens.get(ctx, s.client, pod, audience, expirationSeconds)
}
