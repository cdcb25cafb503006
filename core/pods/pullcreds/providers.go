package pullcreds

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
	"sigs.k8s.io/yaml"
)

// The API versions upstream's kubelet accepts for its credential provider
// config file and for the request and response of a plugin; they differ
// only in the name, so one set of types serves them.
var (
	configAPIVersions = []string{"kubelet.config.k8s.io/v1", "kubelet.config.k8s.io/v1beta1", "kubelet.config.k8s.io/v1alpha1"}
	pluginAPIVersions = []string{"credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v1beta1", "credentialprovider.kubelet.k8s.io/v1alpha1"}
)

// pluginTimeout bounds one run of a plugin, as upstream's catch-all.
const pluginTimeout = time.Minute

// globalCacheKey is the cache key of a response with cacheKeyType Global.
const globalCacheKey = "global"

// provider is one exec credential provider plugin of the config file.
type provider struct {
	name, path, apiVersion string
	matchImages            []string
	defaultCacheDuration   time.Duration
	args                   []string
	env                    []string
	now                    func() time.Time
	metrics                *pluginMetrics

	mu    sync.Mutex
	cache map[string]cachedResponse
	// running shares one run of the plugin between pulls of one image,
	// as upstream's singleflight group.
	running singleflight.Group
}

type cachedResponse struct {
	config  DockerConfig
	expires time.Time
}

// loadProviders reads the kubelet's credential provider config file
// (CredentialProviderConfig) and checks each provider as upstream does: a
// name that is a file in binDir, matchImages, defaultCacheDuration and a
// known apiVersion.
func loadProviders(configFile, binDir string, now func() time.Time, met *pluginMetrics) ([]*provider, error) {
	data, err := os.ReadFile(configFile)
	if err != nil {
		return nil, fmt.Errorf("credential provider config: %w", err)
	}
	var cfg kubeletconfigv1.CredentialProviderConfig
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return nil, fmt.Errorf("credential provider config %s: %w", configFile, err)
	}
	if cfg.Kind != "CredentialProviderConfig" || !slices.Contains(configAPIVersions, cfg.APIVersion) {
		return nil, fmt.Errorf("credential provider config %s: kind %q apiVersion %q, want CredentialProviderConfig of %s",
			configFile, cfg.Kind, cfg.APIVersion, strings.Join(configAPIVersions, ", "))
	}
	if len(cfg.Providers) == 0 {
		return nil, fmt.Errorf("credential provider config %s: at least 1 item in plugins is required", configFile)
	}
	var errs []error
	seen := map[string]bool{}
	providers := make([]*provider, 0, len(cfg.Providers))
	for i, p := range cfg.Providers {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("providers[%d] (%q): %s", i, p.Name, fmt.Sprintf(format, args...)))
		}
		switch {
		case p.Name == "" || p.Name == "." || p.Name == ".." || strings.ContainsAny(p.Name, `/\`):
			bad("name must be a file name in %s", binDir)
			continue
		case seen[p.Name]:
			bad("duplicate name")
			continue
		}
		seen[p.Name] = true
		if p.TokenAttributes != nil {
			bad("tokenAttributes (service account tokens for plugins) is not supported by microlet")
		}
		if len(p.MatchImages) == 0 {
			bad("matchImages is required")
		}
		for _, m := range p.MatchImages {
			if err := checkMatchImage(m); err != nil {
				bad("matchImages %q: %v", m, err)
			}
		}
		if p.DefaultCacheDuration == nil || p.DefaultCacheDuration.Duration < 0 {
			bad("defaultCacheDuration is required and must not be negative")
		}
		if !slices.Contains(pluginAPIVersions, p.APIVersion) {
			bad("apiVersion %q: want one of %s", p.APIVersion, strings.Join(pluginAPIVersions, ", "))
		}
		path := filepath.Join(binDir, p.Name)
		if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
			bad("no plugin executable at %s", path)
		}
		pr := &provider{name: p.Name, path: path, apiVersion: p.APIVersion, matchImages: p.MatchImages,
			args: p.Args, now: now, metrics: met, cache: map[string]cachedResponse{}}
		if p.DefaultCacheDuration != nil {
			pr.defaultCacheDuration = p.DefaultCacheDuration.Duration
		}
		for _, e := range p.Env {
			pr.env = append(pr.env, e.Name+"="+e.Value)
		}
		providers = append(providers, pr)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("credential provider config %s: %w", configFile, err)
	}
	return providers, nil
}

// checkMatchImage rejects what upstream's validation does: a pattern that
// is no URL, or has a scheme.
func checkMatchImage(m string) error {
	if strings.Contains(m, "://") {
		return errors.New("must not have a scheme")
	}
	if _, err := locationKey(m); err != nil {
		return err
	}
	return nil
}

// matches says whether the plugin handles image.
func (p *provider) matches(image string) bool {
	for _, m := range p.matchImages {
		if urlsMatch(m, image) {
			return true
		}
	}
	return false
}

// provide is the plugin's docker config for image: cached by image,
// registry or globally as the plugin's response said, else from a run of
// the plugin. A plugin that fails provides nothing, as upstream; the error
// says why.
func (p *provider) provide(ctx context.Context, image string) (DockerConfig, error) {
	if !p.matches(image) {
		return nil, nil
	}
	registry, _, _ := strings.Cut(image, "/")
	p.mu.Lock()
	now := p.now()
	for k, c := range p.cache {
		if !now.Before(c.expires) {
			delete(p.cache, k)
		}
	}
	for _, key := range []string{"image:" + image, "registry:" + registry, globalCacheKey} {
		if c, ok := p.cache[key]; ok {
			p.mu.Unlock()
			return c.config, nil
		}
	}
	p.mu.Unlock()
	run := p.running.DoChan(image, func() (any, error) { return p.exec(ctx, image, registry) })
	select {
	case r := <-run:
		config, _ := r.Val.(DockerConfig)
		return config, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// exec runs the plugin with a CredentialProviderRequest on stdin, reads
// its CredentialProviderResponse and caches it.
func (p *provider) exec(ctx context.Context, image, registry string) (DockerConfig, error) {
	req, err := json.Marshal(credentialproviderv1.CredentialProviderRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: p.apiVersion, Kind: "CredentialProviderRequest"},
		Image:    image,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, pluginTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, p.path, p.args...)
	// The node's environment and the config's variables, which win.
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(req), &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	p.metrics.duration.WithLabelValues(p.name).Observe(time.Since(start).Seconds())
	if err != nil {
		p.metrics.errors.WithLabelValues(p.name).Inc()
		return nil, fmt.Errorf("error execing credential provider plugin %s for image %s: %w: %s", p.name, image, err, strings.TrimSpace(stderr.String()))
	}
	var resp credentialproviderv1.CredentialProviderResponse
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return nil, fmt.Errorf("credential provider plugin %s: decoding its response: %w", p.name, err)
	}
	if resp.Kind != "CredentialProviderResponse" || resp.APIVersion != p.apiVersion {
		return nil, fmt.Errorf("credential provider plugin %s: response of kind %q apiVersion %q, want CredentialProviderResponse of %s",
			p.name, resp.Kind, resp.APIVersion, p.apiVersion)
	}
	var key string
	switch resp.CacheKeyType {
	case credentialproviderv1.ImagePluginCacheKeyType:
		key = "image:" + image
	case credentialproviderv1.RegistryPluginCacheKeyType:
		key = "registry:" + registry
	case credentialproviderv1.GlobalPluginCacheKeyType:
		key = globalCacheKey
	default:
		return nil, fmt.Errorf("credential provider plugin %s: invalid cacheKeyType %q", p.name, resp.CacheKeyType)
	}
	cfg := make(DockerConfig, len(resp.Auth))
	for match, auth := range resp.Auth {
		cfg[match] = DockerConfigEntry{Username: auth.Username, Password: auth.Password}
	}
	life := p.defaultCacheDuration
	if resp.CacheDuration != nil {
		life = resp.CacheDuration.Duration
	}
	if life > 0 {
		p.mu.Lock()
		p.cache[key] = cachedResponse{config: cfg, expires: p.now().Add(life)}
		p.mu.Unlock()
	}
	return cfg, nil
}
