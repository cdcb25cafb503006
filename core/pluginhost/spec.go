package pluginhost

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/transport"
)

// Spec is one plugin block of the agent config.
type Spec struct {
	// Kind is one of Kinds().
	Kind Kind
	// Name is the plugin's name within its kind.
	Name string
	// Binary is the file name inside Options.Dir; default
	// "microlet-<kind>-<name>". No path separators.
	Binary string
	// SHA256 is an optional hex pin of the binary, verified on every launch.
	SHA256 string
	// Args are passed to the plugin after argv[0].
	Args []string
	// Env is added to the plugin's explicit environment; the host's
	// environment is not inherited.
	Env map[string]string
	// Config is the plugin's config block, handed over as a
	// google.protobuf.Struct.
	Config map[string]any
}

func (s Spec) String() string { return string(s.Kind) + "/" + s.Name }

// BinaryName is the binary's file name in the plugin directory.
func (s Spec) BinaryName() string {
	if s.Binary != "" {
		return s.Binary
	}
	return "microlet-" + string(s.Kind) + "-" + s.Name
}

// basePATH is the whole PATH a plugin gets unless its spec sets one.
const basePATH = "/usr/sbin:/usr/bin:/sbin:/bin"

// reservedEnvPrefixes belong to the handshake: go-plugin's PLUGIN_* and the
// microlet transport's MICROLET_PLUGIN_*.
var reservedEnvPrefixes = []string{"PLUGIN_", "MICROLET_PLUGIN_"}

// resolvedSpec is a Spec checked and ready to launch.
type resolvedSpec struct {
	Spec
	config *structpb.Struct
}

// resolveSpec checks a spec, fills in defaults, and converts its config. The
// error names the plugin and every problem found.
func resolveSpec(s Spec) (resolvedSpec, error) {
	var errs []error
	_, known := s.Kind.Info()
	if !known {
		errs = append(errs, fmt.Errorf("unknown kind %q; expected one of %v", s.Kind, sdk.KnownKinds()))
	}
	for _, msg := range validation.IsDNS1123Label(s.Name) {
		errs = append(errs, fmt.Errorf("name %q: %s", s.Name, msg))
	}
	if err := checkBinaryName(s.BinaryName()); err != nil {
		errs = append(errs, err)
	}
	if s.SHA256 != "" {
		sum, err := hex.DecodeString(s.SHA256)
		if err != nil || len(sum) != 32 {
			errs = append(errs, fmt.Errorf("sha256 %q: expected 64 hexadecimal digits", s.SHA256))
		}
		s.SHA256 = strings.ToLower(s.SHA256)
	}
	for key := range s.Env {
		if err := checkEnvKey(key); err != nil {
			errs = append(errs, err)
		}
	}
	config, err := configStruct(s.Config)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return resolvedSpec{}, fmt.Errorf("plugin %s: %w", s, err)
	}
	s.Binary = s.BinaryName()
	return resolvedSpec{Spec: s, config: config}, nil
}

// checkBinaryName refuses anything but a plain file name, so a spec cannot
// reach outside the plugin directory.
func checkBinaryName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("binary %q: expected a file name inside the plugin directory, without path separators", name)
	}
	return nil
}

func checkEnvKey(key string) error {
	if key == "" || strings.ContainsAny(key, "=\x00") {
		return fmt.Errorf("env key %q: expected a name without '=' or NUL", key)
	}
	for _, prefix := range reservedEnvPrefixes {
		if strings.HasPrefix(key, prefix) {
			return fmt.Errorf("env key %q: names starting %s are reserved for the plugin handshake", key, prefix)
		}
	}
	return nil
}

// configStruct converts a config block to a Struct through JSON, so any
// value a config parser produces (typed slices of maps, integers) converts.
func configStruct(config map[string]any) (*structpb.Struct, error) {
	if len(config) == 0 {
		return &structpb.Struct{}, nil
	}
	raw, err := json.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var plain map[string]any
	if err := json.Unmarshal(raw, &plain); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	st, err := structpb.NewStruct(plain)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return st, nil
}

// specDiff names the fields in which two specs differ; empty when a running
// process of old can serve new.
func specDiff(old, new resolvedSpec) []string {
	var changed []string
	if old.Name != new.Name {
		changed = append(changed, "name")
	}
	if old.Binary != new.Binary {
		changed = append(changed, "binary")
	}
	if old.SHA256 != new.SHA256 {
		changed = append(changed, "sha256")
	}
	if !slices.Equal(old.Args, new.Args) {
		changed = append(changed, "args")
	}
	if !maps.Equal(old.Env, new.Env) {
		changed = append(changed, "env")
	}
	if !proto.Equal(old.config, new.config) {
		changed = append(changed, "config")
	}
	return changed
}

// processEnv is a plugin's whole environment, apart from what go-plugin adds
// for the handshake: PATH, the spec's env, then the transport's variables.
func processEnv(s resolvedSpec, logLevel string) []string {
	env := make([]string, 0, len(s.Env)+4)
	if _, ok := s.Env["PATH"]; !ok {
		env = append(env, "PATH="+basePATH)
	}
	keys := slices.Collect(maps.Keys(s.Env))
	sort.Strings(keys)
	for _, key := range keys {
		env = append(env, key+"="+s.Env[key])
	}
	return append(env,
		transport.EnvLogLevel+"="+logLevel,
		transport.EnvKind+"="+string(s.Kind),
		transport.EnvName+"="+s.Name,
	)
}
