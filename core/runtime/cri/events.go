package cri

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SupportsEvents reports whether the runtime streams container events
// (GetContainerEvents). containerd 1.6 does not: it answers Unimplemented.
// Connect finds out; a stream that later turns out unimplemented (the
// runtime was replaced by an older one) clears it.
func (c *Client) SupportsEvents() bool {
	return c.eventsSupported.Load()
}

// probeEvents opens an event stream and waits for a verdict. A runtime
// without the call answers Unimplemented at once; one with it either sends
// an event or keeps the stream open with nothing to say, and the probe's
// deadline ends the wait.
func (c *Client) probeEvents(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.EventsProbeTimeout)
	defer cancel()
	stream, err := c.runtime.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err == nil {
		_, err = stream.Recv()
	}
	if errors.Is(err, io.EOF) { // the runtime ended the stream cleanly: it serves it
		return true
	}
	switch status.Code(err) {
	case codes.OK, codes.DeadlineExceeded: // an event, or an open stream with nothing to say yet
		return true
	case codes.Unimplemented:
		return false
	default:
		c.log.Warn("could not tell whether the runtime streams container events; assuming not", "error", err)
		return false
	}
}

// EventStream is an open GetContainerEvents stream.
type EventStream struct {
	c      *Client
	stream grpc.ServerStreamingClient[runtimeapi.ContainerEventResponse]
}

// ContainerEvents opens a stream of container events. It lasts until ctx
// ends or the runtime goes away; the caller reopens it (or falls back to
// relisting) when Recv fails.
func (c *Client) ContainerEvents(ctx context.Context) (*EventStream, error) {
	stream, err := c.runtime.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		return nil, c.events(err)
	}
	return &EventStream{c: c, stream: stream}, nil
}

// Recv waits for the next event.
func (s *EventStream) Recv() (*runtimeapi.ContainerEventResponse, error) {
	event, err := s.stream.Recv()
	if err != nil {
		return nil, s.c.events(err)
	}
	return event, nil
}

func (c *Client) events(err error) error {
	if status.Code(err) == codes.Unimplemented {
		c.eventsSupported.Store(false)
	}
	return c.wrap("GetContainerEvents", "", err)
}
