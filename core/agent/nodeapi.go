package agent

import (
	"crypto/tls"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/nodeapi"
	"github.com/microlet/microlet/core/nodeapi/auth"
)

// newNodeAPI builds the node API's listeners over the pod machinery, and
// the secure port's authentication and authorization.
func (a *Agent) newNodeAPI(p *pods, c *cluster) (*nodeapi.Server, error) {
	cfg := a.cfg
	var guard *auth.Auth
	if cfg.Port != 0 {
		var err error
		if guard, err = a.newAuth(cfg, c); err != nil {
			return nil, fmt.Errorf("node API: %w", err)
		}
	}
	var serving func() *tls.Certificate
	if c != nil && c.serving != nil {
		serving = c.serving.Current
	}
	return nodeapi.New(nodeapi.Options{
		Config:             a.config,
		Auth:               guard,
		ServingCertificate: serving,
		Healthz:            a.healthz,
		Pods:               p.loop,
		Runtime:            p.cri,
		Stats:              p.stats,
		Capacity:           p.capacity,
		Identity:           p.identity,
		PodCgroup: func(uid types.UID) (string, bool) {
			cgroup, _, ok := p.cgroups.PodCgroup(uid)
			return cgroup, ok
		},
		Metrics:      a.metrics,
		ProbeMetrics: a.probeMetrics,
		Logger:       a.log.Named("nodeapi"),
	})
}

// newAuth builds the secure port's authentication and authorization, and
// says plainly when nothing can authenticate.
func (a *Agent) newAuth(cfg *config.Config, c *cluster) (*auth.Auth, error) {
	var api *rest.Config
	if c != nil {
		api = c.rest
	}
	authn := cfg.Authentication
	tokens := authn.Webhook.Enabled && api != nil
	if authn.Webhook.Enabled && api == nil {
		a.log.Info("bearer tokens are not accepted on the node API: authentication.webhook needs kubeconfig")
	}
	if authn.X509.ClientCAFile == "" && !tokens && !authn.Anonymous.Enabled {
		a.log.Warn("the node API has no way to authenticate anyone: every request to its secure port gets 401; " +
			"set authentication.x509.client_ca_file, or kubeconfig for bearer tokens")
	}
	return auth.New(auth.Options{
		NodeName:      cfg.NodeName,
		ClientCAFile:  authn.X509.ClientCAFile,
		API:           api,
		TokenWebhook:  authn.Webhook.Enabled,
		TokenCacheTTL: authn.Webhook.CacheTTL,
		Anonymous:     authn.Anonymous.Enabled,
		Mode:          cfg.Authorization.Mode,
		AuthorizedTTL: cfg.Authorization.Webhook.CacheAuthorizedTTL,
		DeniedTTL:     cfg.Authorization.Webhook.CacheUnauthorizedTTL,
	})
}

// config is the config in force, for /configz.
func (a *Agent) config() *config.Config {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cfg
}
