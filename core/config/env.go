package config

import (
	"strings"

	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/v2"

	"github.com/microlet/microlet/sdk/transport"
)

// EnvPrefix starts the name of every environment variable Load reads.
const EnvPrefix = "MICROLET_"

// envReserved are variables the core sets for plugin processes; they are
// not configuration, and a plugin block's env may not set them either.
var envReserved = map[string]bool{
	transport.Handshake.MagicCookieKey: true,
	transport.EnvLogLevel:              true,
	transport.EnvKind:                  true,
	transport.EnvName:                  true,
}

// envKey maps MICROLET_PLUGIN_HOST__CALL_TIMEOUT to plugin_host.call_timeout.
func envKey(name string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, EnvPrefix), "__", "."))
}

// envName is the variable that sets a dotted key.
func envName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "__"))
}

// envLayer reads the MICROLET_ variables of environ ("NAME=value" entries).
func envLayer(environ []string) (koanf.Provider, *layer) {
	l := &layer{
		text:      true,
		positions: map[string]Position{},
		spell:     func(parent, name string) string { return envName(joinKey(parent, name)) },
	}
	values := map[string]string{}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || envReserved[name] {
			continue
		}
		key := envKey(name)
		values[key] = value
		l.positions[key] = Position{File: name}
	}
	// Nest the keys in name order, so that a key always comes before the
	// keys below it and a variable naming both a value and something below
	// it (MICROLET_A and MICROLET_A__B) is reported the same way every time.
	tree := map[string]any{}
	for _, key := range sortedKeys(values) {
		if above, ok := insertKey(tree, key, values[key]); !ok {
			l.readErrs = append(l.readErrs, &Error{
				Position: l.positions[key],
				Key:      key,
				Message:  "cannot be set: " + envName(above) + " sets " + above + " to a value",
			})
		}
	}
	return confmap.Provider(tree, ""), l
}

// insertKey sets a dotted key in a nested map; it fails, naming the key in
// the way, when a key above it already holds a value.
func insertKey(tree map[string]any, key string, value any) (string, bool) {
	parts := strings.Split(key, ".")
	m := tree
	for i, p := range parts[:len(parts)-1] {
		switch sub := m[p].(type) {
		case nil:
			next := map[string]any{}
			m[p] = next
			m = next
		case map[string]any:
			m = sub
		default:
			return strings.Join(parts[:i+1], "."), false
		}
	}
	m[parts[len(parts)-1]] = value
	return "", true
}
