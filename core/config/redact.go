package config

import (
	"net/url"
	"reflect"
	"slices"
	"strings"
)

// redacted replaces a hidden value.
const redacted = "<redacted>"

// sensitiveWords mark a key whose value is hidden wherever it appears,
// plugin config bodies and header names included.
var sensitiveWords = []string{"token", "secret", "password", "authorization"}

// Redacted returns the configuration as nested maps in the HCL key layout
// (durations as strings such as "2s"), fit to serve as JSON on /configz.
// Hidden: every value of a plugin block's env, the value of any key whose
// name contains token, secret, password or authorization (any case) among
// the names operators choose (header names, plugin config bodies), and the
// password of static_pod_url. microlet's own keys hold no secrets (the
// authorization block is a mode and TTLs) and are shown.
func (c *Config) Redacted() map[string]any {
	tree := agentSchema.tree(reflect.ValueOf(c).Elem())
	if u, err := url.Parse(c.StaticPodURL); err == nil && u.User != nil {
		tree["static_pod_url"] = u.Redacted()
	}
	plugins := map[string]any{}
	for i := range c.Plugins {
		p := &c.Plugins[i]
		block := pluginSchema.tree(reflect.ValueOf(p).Elem())
		env := map[string]any{}
		for name := range p.Env {
			env[name] = redacted
		}
		block["env"] = env
		setPath(plugins, joinKey(p.Kind, p.Name), block)
	}
	tree[pluginKey] = plugins
	return redactSensitive(tree, agentSchema, "").(map[string]any)
}

// redactSensitive copies a file-form tree, hiding sensitive keys' values.
// Keys of s (at path) are microlet's own and kept; below them, and
// everywhere else, names are the operator's and checked.
func redactSensitive(v any, s *schema, path string) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			key := joinKey(path, k)
			own := s != nil && (s.byKey[key] != nil || s.groups[key])
			switch {
			case own && s.groups[key]:
				out[k] = redactSensitive(e, s, key)
			case own:
				out[k] = redactSensitive(e, nil, "")
			case isSensitive(k):
				out[k] = redacted
			default:
				out[k] = redactSensitive(e, nil, "")
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = redactSensitive(e, nil, "")
		}
		return out
	default:
		return v
	}
}

func isSensitive(key string) bool {
	key = strings.ToLower(key)
	for _, w := range sensitiveWords {
		if strings.Contains(key, w) {
			return true
		}
	}
	return false
}

// RedactedArgs returns a copy of a command line (os.Args) with the values of
// the flags that may carry credentials (--manifest-url, --manifest-url-header)
// hidden whole, in both spellings, --flag=value and --flag value. A command
// line is shown as text (/debug/pprof/cmdline), where /configz's finer
// redaction has no structure to work on.
func RedactedArgs(args []string) []string {
	out := slices.Clone(args)
	for i := 1; i < len(out); i++ {
		arg := out[i]
		if arg == "--" {
			break // the rest are arguments, not flags
		}
		name, hasValue := strings.CutPrefix(arg, "--")
		if !hasValue {
			continue
		}
		name, _, inline := strings.Cut(name, "=")
		if !credentialFlags[name] {
			continue
		}
		if inline {
			out[i] = "--" + name + "=" + redacted
		} else if i+1 < len(out) {
			i++
			out[i] = redacted
		}
	}
	return out
}

// credentialFlags are the names of the flags whose values RedactedArgs hides.
var credentialFlags = func() map[string]bool {
	names := map[string]bool{}
	for _, spec := range flagSpecs {
		if spec.credentials {
			names[spec.name] = true
		}
	}
	return names
}()
