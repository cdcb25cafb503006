package config

import (
	"net/url"
	"reflect"
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
// name contains token, secret, password or authorization (any case), and
// the password of static_pod_url.
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
	return redactSensitive(tree).(map[string]any)
}

// redactSensitive copies a file-form tree, hiding sensitive keys' values.
func redactSensitive(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if isSensitive(k) {
				out[k] = redacted
			} else {
				out[k] = redactSensitive(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = redactSensitive(e)
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
