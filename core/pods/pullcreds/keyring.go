// Package pullcreds finds the credentials for pulling an image, as the
// kubelet's credential provider keyring (k8s.io/kubernetes
// pkg/credentialprovider, which is not importable without the kubelet's
// feature gates and config API): the pod's image pull secrets first, then
// the node's docker config file, then the kubelet's exec credential
// provider plugins. Every matching credential is tried in that order.
package pullcreds

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
)

// AuthConfig is one credential for a registry, as the CRI takes it.
type AuthConfig struct {
	Username, Password string
}

// DockerConfig is a docker config's entries: a registry location (a host
// with an optional port, path, scheme and globs: "*.example.com/team") and
// its credential.
type DockerConfig map[string]DockerConfigEntry

// DockerConfigEntry is a credential in a docker config; "auth" (base64 of
// user:password) wins over username and password, as upstream.
type DockerConfigEntry struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Email    string `json:"email,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

func (e DockerConfigEntry) credential() (AuthConfig, error) {
	if e.Auth == "" {
		return AuthConfig{Username: e.Username, Password: e.Password}, nil
	}
	// Padded or not, as docker writes either.
	enc := base64.RawStdEncoding
	if strings.HasSuffix(strings.TrimSpace(e.Auth), "=") {
		enc = base64.StdEncoding
	}
	decoded, err := enc.DecodeString(strings.TrimSpace(e.Auth))
	if err != nil {
		return AuthConfig{}, fmt.Errorf("auth field: %w", err)
	}
	user, pass, ok := strings.Cut(string(decoded), ":")
	if !ok {
		return AuthConfig{}, fmt.Errorf("auth field: must be formatted as base64(username:password)")
	}
	return AuthConfig{Username: user, Password: pass}, nil
}

// ParseDockerConfigJSON reads a config.json (a kubernetes.io/dockerconfigjson
// secret's .dockerconfigjson): {"auths": {...}}.
func ParseDockerConfigJSON(data []byte) (DockerConfig, error) {
	var cfg struct {
		Auths DockerConfig `json:"auths"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("not a docker config.json: %w", err)
	}
	return cfg.Auths, nil
}

// ParseDockercfg reads the legacy .dockercfg format (a
// kubernetes.io/dockercfg secret's .dockercfg): the entries at top level.
func ParseDockercfg(data []byte) (DockerConfig, error) {
	var cfg DockerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("not a .dockercfg: %w", err)
	}
	return cfg, nil
}

// keyring holds credentials by location. Lookup tries the most specific
// locations first: keys sorted in reverse, as upstream's
// BasicDockerKeyring, so "reg/team/app" comes before "reg/team" and "reg".
type keyring struct {
	index []string
	creds map[string][]AuthConfig
}

// add adds cfg's entries; one that does not parse is left out and
// returned as an error, the others still count.
func (k *keyring) add(cfg DockerConfig) error {
	if k.creds == nil {
		k.creds = map[string][]AuthConfig{}
	}
	var bad []string
	locs := make([]string, 0, len(cfg))
	for loc := range cfg {
		locs = append(locs, loc)
	}
	slices.Sort(locs) // a stable order of credentials for one key
	for _, loc := range locs {
		key, err := locationKey(loc)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", loc, err))
			continue
		}
		cred, err := cfg[loc].credential()
		if err != nil {
			bad = append(bad, fmt.Sprintf("%q: %v", loc, err))
			continue
		}
		if _, ok := k.creds[key]; !ok {
			k.index = append(k.index, key)
		}
		k.creds[key] = append(k.creds[key], cred)
	}
	slices.Sort(k.index)
	slices.Reverse(k.index)
	if len(bad) > 0 {
		return fmt.Errorf("entries ignored: %s", strings.Join(bad, "; "))
	}
	return nil
}

// locationKey is upstream's key of a docker config location: host and
// path without the scheme and a /v1/ or /v2/ prefix.
func locationKey(loc string) (string, error) {
	value := loc
	if !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "http://") {
		value = "https://" + value
	}
	parsed, err := url.Parse(value)
	if err != nil {
		return "", err
	}
	path := parsed.Path
	if strings.HasPrefix(path, "/v2/") || strings.HasPrefix(path, "/v1/") {
		path = path[3:]
	}
	if path != "" && path != "/" {
		return parsed.Host + path, nil
	}
	return parsed.Host, nil
}

// The Docker Hub's key in docker configs.
const defaultRegistryHost = "index.docker.io"

// lookup is every credential whose location matches image (a repository
// without tag or digest, "registry/path"), most specific first.
func (k *keyring) lookup(image string) []AuthConfig {
	var out []AuthConfig
	for _, key := range k.index {
		if urlsMatch(key, image) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && isDefaultRegistry(image) {
		out = append(out, k.creds[defaultRegistryHost]...)
	}
	return out
}

// isDefaultRegistry says whether image is on the Docker Hub.
func isDefaultRegistry(image string) bool {
	first, _, found := strings.Cut(image, "/")
	if first == "" {
		return false
	}
	if !found {
		return true
	}
	if first == "docker.io" || first == "index.docker.io" {
		return true
	}
	return !strings.ContainsAny(first, ".:")
}

// urlsMatch is upstream's URLsMatchStr: glob and target, both without a
// scheme, match when their ports are equal, their hosts have as many
// dot-separated parts and each part matches as a filepath.Match glob, and
// the target's path starts with the glob's.
func urlsMatch(glob, target string) bool {
	g, err := url.Parse("https://" + glob)
	if err != nil {
		return false
	}
	t, err := url.Parse("https://" + target)
	if err != nil {
		return false
	}
	gParts, gPort := splitHost(g.Host)
	tParts, tPort := splitHost(t.Host)
	if gPort != tPort || len(gParts) != len(tParts) || !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	for i, part := range gParts {
		if ok, err := filepath.Match(part, tParts[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func splitHost(hostport string) ([]string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}
