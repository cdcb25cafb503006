package probes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/microlet/microlet/core/pluginhost"
	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// Run keeps the plugin probing what UpdatePod asks for, and the results
// flowing into the cache, until ctx ends: one session per serving plugin
// process. Each session opens WatchResults, sends the whole set with
// SyncProbes, then pushes changes as they come; it ends when its process
// is retired or dies, or a call fails, and the next session starts on the
// process then serving. Between sessions every verdict stays as it is.
// Without a plugin it only waits for ctx.
func (m *Manager) Run(ctx context.Context) {
	if m.slot == nil {
		<-ctx.Done()
		return
	}
	pluginhost.Follow(ctx, m.slot, m.session, func(err error) {
		switch {
		case errors.Is(err, pluginhost.ErrUnavailable):
			m.logger.Trace("probes plugin unavailable; keeping the last probe results", "error", err)
		case errors.Is(err, pluginhost.ErrRetired):
			m.logger.Debug("probes plugin process retired; moving to the next one")
		default:
			m.logger.Warn("probes plugin session ended; keeping the last probe results", "error", err)
		}
	})
}

// session serves one plugin process until it is retired, its stream
// breaks, a call fails or ctx ends. synced says whether it got as far as
// handing the plugin the whole set.
func (m *Manager) session(ctx context.Context, lease *pluginhost.Lease) (synced bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := probesv1.NewProbesServiceClient(lease.Conn)
	// The watch opens first, so that no result of the set sent next is
	// missed; the plugin restates standing verdicts to a new watch.
	stream, err := client.WatchResults(ctx, &probesv1.WatchResultsRequest{})
	if err != nil {
		return false, fmt.Errorf("open WatchResults: %w", err)
	}
	received := make(chan struct{})
	var receiveErr error
	go func() {
		defer close(received)
		receiveErr = m.receive(ctx, stream)
	}()
	defer func() {
		cancel()
		<-received
	}()

	if err := m.sync(ctx, client); err != nil {
		return false, err
	}
	for {
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case <-received:
			return true, fmt.Errorf("WatchResults: %w", receiveErr)
		case <-m.kick:
			if err := m.push(ctx, client); err != nil {
				return true, err
			}
		}
	}
}

// receive applies the plugin's results until the stream ends.
func (m *Manager) receive(ctx context.Context, stream probesv1.ProbesService_WatchResultsClient) error {
	for {
		resp, err := stream.Recv()
		if err != nil {
			return err
		}
		m.apply(ctx, resp.GetResult())
	}
}

// sync hands the plugin the whole set. Changes made meanwhile are pushed
// after it.
func (m *Manager) sync(ctx context.Context, client probesv1.ProbesServiceClient) error {
	m.mu.Lock()
	all := make([]*probesv1.ContainerProbes, 0, len(m.containers))
	for _, e := range m.containers {
		if c := e.wire(); c != nil {
			all = append(all, c)
		}
	}
	clear(m.pending)
	m.mu.Unlock()
	slices.SortFunc(all, func(a, b *probesv1.ContainerProbes) int {
		return strings.Compare(a.GetContainerId(), b.GetContainerId())
	})

	ctx, cancel := context.WithTimeout(ctx, m.callTimeout)
	defer cancel()
	stream, err := client.SyncProbes(ctx)
	if err != nil {
		return fmt.Errorf("SyncProbes: %w", err)
	}
	for _, c := range all {
		if err := stream.Send(&probesv1.SyncProbesRequest{Container: c}); err != nil {
			// The stream's status, not the send's io.EOF, says why.
			_, err = stream.CloseAndRecv()
			return fmt.Errorf("SyncProbes: %w", err)
		}
	}
	_, err = stream.CloseAndRecv()
	if status.Code(err) == codes.InvalidArgument {
		// The plugin probes the others; the refused ones cannot be helped
		// by sending them again.
		m.logger.Error("the probes plugin refused some containers' probes", "error", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("SyncProbes: %w", err)
	}
	m.logger.Debug("probes plugin has the whole set", "containers", len(all))
	return nil
}

// push tells the plugin of every pending change.
func (m *Manager) push(ctx context.Context, client probesv1.ProbesServiceClient) error {
	for {
		id, c, ok := m.nextPending()
		if !ok {
			return nil
		}

		callCtx, cancel := context.WithTimeout(ctx, m.callTimeout)
		var err error
		if c != nil {
			_, err = client.SetContainerProbes(callCtx, &probesv1.SetContainerProbesRequest{Container: c})
		} else {
			_, err = client.RemoveContainerProbes(callCtx, &probesv1.RemoveContainerProbesRequest{ContainerId: id})
		}
		cancel()
		switch {
		case status.Code(err) == codes.InvalidArgument:
			m.logger.Error("the probes plugin refused a container's probes", "container_id", id, "error", err)
		case err != nil:
			// The next session sends the whole set, this change included.
			return fmt.Errorf("push the probes of container %s: %w", id, err)
		}
	}
}

// nextPending takes one pending change: the container's probes to set, or
// nil to remove them.
func (m *Manager) nextPending() (string, *probesv1.ContainerProbes, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.pending {
		delete(m.pending, id)
		if e := m.containers[id]; e != nil {
			return id, e.wire(), true
		}
		return id, nil, true
	}
	return "", nil, false
}
