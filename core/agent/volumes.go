package agent

import (
	"github.com/microlet/microlet/core/cluster/volumesources"
	"github.com/microlet/microlet/core/pods/podruntime"
)

// volumeSources reads what configMap, secret and projected volumes show
// from the API server; nil on a standalone node, which cannot set them up.
func (c *cluster) volumeSources() podruntime.VolumeSources {
	if c == nil {
		return nil
	}
	return volumesources.New(c.client, 0, nil)
}
