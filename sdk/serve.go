package sdk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	basev1 "github.com/microlet/microlet/proto/microlet/base/v1"
	"github.com/microlet/microlet/sdk/internal/stdoutguard"
	"github.com/microlet/microlet/sdk/transport"
)

// Info identifies a plugin.
type Info struct {
	// Kind is the plugin kind: KindEviction, KindImageGC, ...
	Kind string
	// Name is the plugin's name within its kind, as in its binary name
	// microlet-<kind>-<name>: lower-case letters, digits and '-'.
	Name string
	// Version is the plugin's own release version (semver).
	Version string
}

// Plugin is implemented by every plugin; C is its config type. Besides
// Configure, a plugin implements the interface of its kind (EvictionStrategy,
// ImageCollector, ...).
type Plugin[C any] interface {
	// Configure applies a decoded and validated config block. It is called
	// once, before any call of the kind's interface (which the SDK refuses
	// until Configure has succeeded). host is the core's HostService, or
	// nil when the core offers none.
	Configure(ctx context.Context, cfg *C, host *Host) error
}

// Serve runs the plugin until the core stops it. It never returns. A
// plugin that cannot be served (an unknown kind, a missing method, a config
// type a block cannot decode into) logs why and exits 1 before the
// handshake, so the core reports it at launch.
func Serve[C any](info Info, p Plugin[C]) {
	limitParallelism()
	nameProcess()
	logger := Log()
	gp, err := newGRPCPlugin(info, p, logger, true)
	if err != nil {
		logger.Error("cannot serve plugin", "error", err)
		os.Exit(1)
	}
	// Give go-plugin the real standard output for its handshake line; until
	// now the guard kept everything printed away from it.
	if stdout := stdoutguard.Handshake(); stdout != nil {
		os.Stdout = stdout
	}
	go exitWhenOrphaned(logger)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  transport.Handshake,
		VersionedPlugins: transport.PluginSet(gp),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, transport.ServerOptions()...)
			return grpc.NewServer(append(opts, releaseAfterCalls())...)
		},
		Logger: logger,
	})
	os.Exit(0)
}

// NewGRPCPlugin builds the go-plugin entry that serves p: the base service
// plus the service of info.Kind. Serve uses it; so do test harnesses that
// run a plugin in-process (sdktest). logger receives the SDK's own lines
// (recovered panics); Configure sets its level to the core's.
func NewGRPCPlugin[C any](info Info, p Plugin[C], logger hclog.Logger) (*transport.GRPCPlugin, error) {
	return newGRPCPlugin(info, p, logger, false)
}

func newGRPCPlugin[C any](info Info, p Plugin[C], logger hclog.Logger, ownProcess bool) (*transport.GRPCPlugin, error) {
	if err := info.validate(); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, fmt.Errorf("%s plugin %q: the plugin is nil", info.Kind, info.Name)
	}
	kind, ok := kinds[info.Kind]
	if !ok {
		return nil, fmt.Errorf("unknown plugin kind %q (known: %s)", info.Kind, strings.Join(KnownKinds(), ", "))
	}
	register, capabilities, err := kind.adapt(p)
	if err != nil {
		return nil, fmt.Errorf("%s plugin %q: %w", info.Kind, info.Name, err)
	}
	if err := checkConfigType(reflect.TypeFor[C]()); err != nil {
		return nil, fmt.Errorf("%s plugin %q: %w", info.Kind, info.Name, err)
	}
	return &transport.GRPCPlugin{
		Register: func(broker *plugin.GRPCBroker, server *grpc.Server) error {
			configured := new(atomic.Bool)
			basev1.RegisterPluginServiceServer(guardedRegistrar{server: server, logger: logger}, &baseServer[C]{
				info:          info,
				apiVersions:   kind.apiVersions,
				capabilities:  capabilities,
				plugin:        p,
				broker:        broker,
				logger:        logger,
				releaseMemory: ownProcess,
				configured:    configured,
			})
			register(guardedRegistrar{server: server, logger: logger, configured: configured})
			return nil
		},
	}, nil
}

// validate checks what the core will match against its config.
func (info Info) validate() error {
	var problems []string
	if info.Kind == "" {
		problems = append(problems, "Kind is empty")
	}
	if !isPluginName(info.Name) {
		problems = append(problems, fmt.Sprintf("Name %q is not lower-case letters, digits and '-' (as in microlet-<kind>-<name>)", info.Name))
	}
	if info.Version == "" {
		problems = append(problems, "Version is empty")
	}
	if len(problems) > 0 {
		return errors.New("sdk.Info: " + strings.Join(problems, "; "))
	}
	return nil
}

// isPluginName reports whether name is a DNS label: lower-case letters,
// digits and inner '-'.
func isPluginName(name string) bool {
	if name == "" || len(name) > 63 || name[0] == '-' || name[len(name)-1] == '-' {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// exitWhenOrphaned ends the plugin when the core is gone. The core also sets
// a parent-death signal; this covers cores that could not.
func exitWhenOrphaned(logger hclog.Logger) {
	parent := os.Getppid()
	for range time.Tick(time.Second) {
		if os.Getppid() != parent {
			logger.Warn("the core is gone; exiting")
			os.Exit(2)
		}
	}
}
