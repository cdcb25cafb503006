package sdk

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	basev1 "github.com/microlet/microlet/proto/microlet/base/v1"
	"github.com/microlet/microlet/sdk/transport"
)

// Info identifies a plugin.
type Info struct {
	// Kind is the plugin kind: KindEviction, KindImageGC, ...
	Kind string
	// Name is the plugin's name within its kind, as in its binary name
	// microlet-<kind>-<name>.
	Name string
	// Version is the plugin's own release version (semver).
	Version string
}

// Plugin is implemented by every plugin; C is its config type. Besides
// Configure, a plugin implements the interface of its kind (EvictionStrategy,
// ImageCollector, ...).
type Plugin[C any] interface {
	// Configure applies a decoded and validated config block. It is called
	// once, before any call of the kind's interface. host is the core's
	// HostService, or nil when the core offers none.
	Configure(ctx context.Context, cfg *C, host *Host) error
}

// handshakeStdout is the real standard output, kept for go-plugin's
// handshake line. Until Serve runs, file descriptor 1 points at standard
// error, so that nothing a plugin prints early (in an init function, say)
// can corrupt the handshake.
var handshakeStdout *os.File

func init() {
	if os.Getenv(transport.Handshake.MagicCookieKey) == "" {
		return // not launched by the core; leave stdout alone
	}
	fd, err := syscall.Dup(1)
	if err != nil {
		return
	}
	if err := syscall.Dup2(2, 1); err != nil {
		_ = syscall.Close(fd)
		return
	}
	handshakeStdout = os.NewFile(uintptr(fd), "/dev/stdout")
}

// Serve runs the plugin until the core stops it. It never returns.
func Serve[C any](info Info, p Plugin[C]) {
	limitParallelism()
	logger := newLogger()
	gp, err := newGRPCPlugin(info, p, logger, true)
	if err != nil {
		logger.Error("cannot serve plugin", "error", err)
		os.Exit(1)
	}
	if handshakeStdout != nil {
		os.Stdout = handshakeStdout
	}
	go exitWhenOrphaned(logger)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  transport.Handshake,
		VersionedPlugins: transport.PluginSet(gp),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts,
				grpc.MaxRecvMsgSize(transport.MaxMessageBytes),
				grpc.MaxSendMsgSize(transport.MaxMessageBytes),
				grpc.ChainUnaryInterceptor(recoverUnary(logger)),
				grpc.ChainStreamInterceptor(recoverStream(logger)))
			return grpc.NewServer(opts...)
		},
		Logger: logger,
	})
	os.Exit(0)
}

// NewGRPCPlugin builds the go-plugin entry that serves p: the base service
// plus the service of info.Kind. Serve uses it; so do test harnesses that
// run a plugin in-process.
func NewGRPCPlugin[C any](info Info, p Plugin[C], logger hclog.Logger) (*transport.GRPCPlugin, error) {
	return newGRPCPlugin(info, p, logger, false)
}

func newGRPCPlugin[C any](info Info, p Plugin[C], logger hclog.Logger, ownProcess bool) (*transport.GRPCPlugin, error) {
	if info.Kind == "" || info.Name == "" {
		return nil, fmt.Errorf("sdk.Info needs a Kind and a Name")
	}
	kind, ok := kinds[info.Kind]
	if !ok {
		return nil, fmt.Errorf("unknown plugin kind %q (known: %v)", info.Kind, KnownKinds())
	}
	register, capabilities, err := kind.adapt(p)
	if err != nil {
		return nil, fmt.Errorf("%s plugin %q: %w", info.Kind, info.Name, err)
	}
	return &transport.GRPCPlugin{
		Register: func(broker *plugin.GRPCBroker, server *grpc.Server) error {
			basev1.RegisterPluginServiceServer(server, &baseServer[C]{
				info:          info,
				apiVersions:   kind.apiVersions,
				capabilities:  capabilities,
				plugin:        p,
				broker:        broker,
				logger:        logger,
				releaseMemory: ownProcess,
			})
			register(server)
			return nil
		},
	}, nil
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

// recoverUnary turns a panic in plugin code into an INTERNAL error, so one
// bad input fails one call instead of crash-looping the process.
func recoverUnary(logger hclog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				logger.Error("panic in plugin call", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
				err = status.Errorf(codes.Internal, "plugin panicked in %s: %v", info.FullMethod, r)
			}
		}()
		return handler(ctx, req)
	}
}

func recoverStream(logger hclog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				logger.Error("panic in plugin call", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
				err = status.Errorf(codes.Internal, "plugin panicked in %s: %v", info.FullMethod, r)
			}
		}()
		return handler(srv, ss)
	}
}
