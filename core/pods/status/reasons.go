package status

import (
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
)

// maxReasonCacheEntries is upstream's: enough for 100 pods per node.
const maxReasonCacheEntries = 1000

// ReasonCache keeps why the latest start of each container failed, by pod
// UID and container name, so that the container's status can say it
// (waiting, reason ErrImagePull, CrashLoopBackOff, ...), as upstream's
// ReasonCache. It is a bounded LRU, not persisted: best effort. The runtime
// manager's sync results feed it: Add for a failed start, Remove for a
// successful one. It is safe for concurrent use.
type ReasonCache struct {
	cache *lru.Cache
}

// Reason is why a container could not start: a reason such as
// "CrashLoopBackOff" and a message.
type Reason struct {
	Reason  string
	Message string
}

type reasonKey struct {
	uid  types.UID
	name string
}

// NewReasonCache makes an empty cache.
func NewReasonCache() *ReasonCache {
	return &ReasonCache{cache: lru.New(maxReasonCacheEntries)}
}

// Add records why the container's last start failed.
func (c *ReasonCache) Add(uid types.UID, containerName, reason, message string) {
	c.cache.Add(reasonKey{uid, containerName}, Reason{Reason: reason, Message: message})
}

// Remove forgets the container's failure: it started.
func (c *ReasonCache) Remove(uid types.UID, containerName string) {
	c.cache.Remove(reasonKey{uid, containerName})
}

// Get returns why the container's last start failed, if known.
func (c *ReasonCache) Get(uid types.UID, containerName string) (Reason, bool) {
	v, ok := c.cache.Get(reasonKey{uid, containerName})
	if !ok {
		return Reason{}, false
	}
	return v.(Reason), true
}
