package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/microlet/microlet/core/cluster/volumesources"
	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/pods/podruntime"
	"github.com/microlet/microlet/core/pods/pullcreds"
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

// pullCredentials finds image pull credentials: the pods' pull secrets
// through sources (nil on a standalone node), the node's docker config in
// root_dir and the usual places, and the credential provider plugins.
func pullCredentials(cfg *config.Config, sources podruntime.VolumeSources, reg prometheus.Registerer) (*pullcreds.Keyring, error) {
	return pullcreds.New(pullcreds.Options{RootDir: cfg.RootDir, Secrets: sources,
		ProviderConfig: cfg.ImageCredentialProviderConfig, ProviderBinDir: cfg.ImageCredentialProviderBinDir, Registerer: reg})
}
