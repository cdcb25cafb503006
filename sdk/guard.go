package sdk

import (
	"context"
	"runtime/debug"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// guardedRegistrar registers a plugin's services with two guards around
// every method. They live in the registration rather than in server
// interceptors so that they hold however the gRPC server was built:
// sdk.Serve's, or go-plugin's test server that sdktest serves plugins on.
//
//   - A panic in plugin code fails that one call with INTERNAL and is
//     logged with its stack, instead of killing the process and every call
//     in flight with it. (A panic in a goroutine the plugin starts itself
//     still ends the process; the core restarts it.)
//   - When configured is set, the methods answer FAILED_PRECONDITION until
//     Configure has succeeded, so no kind method ever runs on an
//     unconfigured plugin. The base service is registered without it.
type guardedRegistrar struct {
	server     grpc.ServiceRegistrar
	logger     hclog.Logger
	configured *atomic.Bool
}

func (g guardedRegistrar) RegisterService(desc *grpc.ServiceDesc, impl any) {
	guarded := *desc
	guarded.Methods = make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		guarded.Methods[i] = grpc.MethodDesc{MethodName: m.MethodName, Handler: g.unary(desc.ServiceName, m)}
	}
	guarded.Streams = make([]grpc.StreamDesc, len(desc.Streams))
	for i, s := range desc.Streams {
		guarded.Streams[i] = s
		guarded.Streams[i].Handler = g.stream(desc.ServiceName, s)
	}
	g.server.RegisterService(&guarded, impl)
}

func (g guardedRegistrar) unary(service string, m grpc.MethodDesc) grpc.MethodHandler {
	method := "/" + service + "/" + m.MethodName
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = g.panicked(method, r)
			}
		}()
		if err := g.ready(); err != nil {
			return nil, err
		}
		return m.Handler(srv, ctx, dec, interceptor)
	}
}

func (g guardedRegistrar) stream(service string, s grpc.StreamDesc) grpc.StreamHandler {
	method := "/" + service + "/" + s.StreamName
	return func(srv any, stream grpc.ServerStream) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = g.panicked(method, r)
			}
		}()
		if err := g.ready(); err != nil {
			return err
		}
		return s.Handler(srv, stream)
	}
}

func (g guardedRegistrar) ready() error {
	if g.configured != nil && !g.configured.Load() {
		return status.Error(codes.FailedPrecondition, "the plugin is not configured yet: call microlet.base.v1.PluginService/Configure first")
	}
	return nil
}

// panicked logs a recovered panic with the stack it unwound and returns
// the call's error. It runs inside the deferred recover, where the stack
// still shows the panic's origin.
func (g guardedRegistrar) panicked(method string, r any) error {
	g.logger.Error("panic in plugin call", "method", method, "panic", r, "stack", string(debug.Stack()))
	return status.Errorf(codes.Internal, "plugin panicked in %s: %v", method, r)
}
