package agent

import (
	"time"

	"github.com/microlet/microlet/core/cluster/volumesources"
	"github.com/microlet/microlet/core/pods/podruntime"
)

// volumeSources reads what configMap, secret and projected volumes show
// from the API server; nil on a standalone node, which cannot set them up.
// An object's watch outlives two sync periods without a read, so that the
// periodic syncs of the pods using it keep it.
func (c *cluster) volumeSources(syncFrequency time.Duration) podruntime.VolumeSources {
	if c == nil {
		return nil
	}
	return volumesources.New(c.client, 2*syncFrequency, nil)
}
