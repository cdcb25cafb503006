package pullcreds

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
)

// SecretGetter reads the pod's pull secrets (the cluster's
// volumesources.Sources, which reads secrets for volumes too).
type SecretGetter interface {
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// Options configure a Keyring.
type Options struct {
	// RootDir is the node's root_dir, where the node-wide config.json is
	// looked for first.
	RootDir string
	// ProviderConfig is the credential provider config file (the kubelet's
	// --image-credential-provider-config), ProviderBinDir where the
	// plugins it names are; "": no plugins.
	ProviderConfig, ProviderBinDir string
	// Secrets reads pull secrets; nil on a node without an API server,
	// where a pod's pull secrets cannot be read.
	Secrets SecretGetter
	// Clock is nil for time.Now.
	Clock func() time.Time
	// Registerer gets the plugins' metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Keyring finds the credentials for a pod's image.
type Keyring struct {
	secrets   SecretGetter
	node      *nodeConfig
	providers []*provider
}

// New makes a Keyring, reading and checking the credential provider
// config if there is one.
func New(opts Options) (*Keyring, error) {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	k := &Keyring{secrets: opts.Secrets, node: newNodeConfig(opts.RootDir, opts.Clock)}
	if opts.ProviderConfig != "" {
		if opts.ProviderBinDir == "" {
			return nil, errors.New("image_credential_provider_bin_dir is required with image_credential_provider_config")
		}
		met, err := newPluginMetrics(opts.Registerer)
		if err != nil {
			return nil, err
		}
		providers, err := loadProviders(opts.ProviderConfig, opts.ProviderBinDir, opts.Clock, met)
		if err != nil {
			return nil, err
		}
		k.providers = providers
	}
	return k, nil
}

// Credentials are what Lookup found for one image.
type Credentials struct {
	// Auths are to be tried in order: the pull secrets' (most specific
	// location first), the node's config file's, the plugins'.
	Auths []AuthConfig
	// FailedSecrets name the pull secrets that could not be read: the
	// kubelet's FailedToRetrieveImagePullSecret event.
	FailedSecrets []string
	// Problems are why some credentials were left out (a config entry that
	// does not parse, a plugin that failed); the pull is still tried.
	Problems []error
}

// Lookup is every credential for image, a repository without tag or
// digest ("registry.example.com:5000/team/app"), for pulling it for pod.
func (k *Keyring) Lookup(ctx context.Context, pod *v1.Pod, image string) Credentials {
	var out Credentials
	var secrets keyring
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" { // the API allowed these once; upstream ignores them
			continue
		}
		cfg, err := k.readSecret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			out.FailedSecrets = append(out.FailedSecrets, ref.Name)
			out.Problems = append(out.Problems, err)
			continue
		}
		if err := secrets.add(cfg); err != nil {
			out.Problems = append(out.Problems, fmt.Errorf("pull secret %s/%s: %w", pod.Namespace, ref.Name, err))
		}
	}
	out.Auths = secrets.lookup(image)

	node, err := k.node.lookup(image)
	if err != nil {
		out.Problems = append(out.Problems, fmt.Errorf("node docker config: %w", err))
	}
	out.Auths = append(out.Auths, node...)

	// The plugins' answers make one keyring, as upstream's
	// providersDockerKeyring: the most specific location first.
	var plugins keyring
	for _, p := range k.providers {
		cfg, err := p.provide(ctx, image)
		if err != nil {
			out.Problems = append(out.Problems, err)
			continue
		}
		if err := plugins.add(cfg); err != nil {
			out.Problems = append(out.Problems, fmt.Errorf("credential provider plugin %s: %w", p.name, err))
		}
	}
	out.Auths = append(out.Auths, plugins.lookup(image)...)
	return out
}

// readSecret reads a pull secret's docker config: a
// kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg secret;
// another type gives none, as upstream.
func (k *Keyring) readSecret(ctx context.Context, namespace, name string) (DockerConfig, error) {
	if k.secrets == nil {
		return nil, fmt.Errorf("pull secret %s/%s: no API server to read it from", namespace, name)
	}
	s, err := k.secrets.GetSecret(ctx, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("pull secret %s/%s: %w", namespace, name, err)
	}
	switch data := s.Data; {
	case s.Type == v1.SecretTypeDockerConfigJson && len(data[v1.DockerConfigJsonKey]) > 0:
		return ParseDockerConfigJSON(data[v1.DockerConfigJsonKey])
	case s.Type == v1.SecretTypeDockercfg && len(data[v1.DockerConfigKey]) > 0:
		return ParseDockercfg(data[v1.DockerConfigKey])
	}
	return nil, nil
}
