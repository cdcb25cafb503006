package pluginhost

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
)

// FinishedCall is one finished call to a plugin process, for Options.OnCall.
type FinishedCall struct {
	Kind Kind
	Name string
	// Method is the gRPC method, "/<package>.<Service>/<Method>".
	Method string
	// Duration is until the answer, or, for a stream, until it ended.
	Duration time.Duration
}

// callObserver times every call on a plugin process's connection and
// reports it to onCall.
func callObserver(onCall func(FinishedCall), kind Kind, name string) []grpc.DialOption {
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		start := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		onCall(FinishedCall{Kind: kind, Name: name, Method: method, Duration: time.Since(start)})
		return err
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		start := time.Now()
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			onCall(FinishedCall{Kind: kind, Name: name, Method: method, Duration: time.Since(start)})
			return nil, err
		}
		return &observedStream{ClientStream: s, done: func() {
			onCall(FinishedCall{Kind: kind, Name: name, Method: method, Duration: time.Since(start)})
		}}, nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}
}

// observedStream reports once, when the stream ends: the server closed it
// or it failed.
type observedStream struct {
	grpc.ClientStream
	once sync.Once
	done func()
}

func (s *observedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.once.Do(s.done)
	}
	return err
}
