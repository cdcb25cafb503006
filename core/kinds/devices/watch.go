package devices

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/microlet/microlet/core/pluginhost"
	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

const (
	// retryMin and retryMax bound the wait before a plugin whose stream
	// failed is asked again; the wait doubles while it fails.
	retryMin = 100 * time.Millisecond
	retryMax = 2 * time.Second
)

// errRetired ends a stream whose plugin process is being retired (a hot
// swap) or has died: the next process is asked at once.
var errRetired = errors.New("the plugin process was retired")

// pluginState is what the manager knows of one watched devices slot.
// Fields other than slot, stop and done are guarded by Manager.mu.
type pluginState struct {
	slot Slot
	stop context.CancelFunc
	// done is closed when the watch has returned.
	done chan struct{}
	// reported: the plugin has sent its resources since the core started.
	reported bool
	// serving: its ListAndWatch stream is open and has delivered.
	serving bool
	// lastErr is why it does not serve, when it does not.
	lastErr error
}

// watch keeps one ListAndWatch stream open to the slot's serving process
// until ctx ends, opening a new one when the process is retired, dies, or
// the stream fails. Between streams the plugin's resources keep their last
// state.
func (m *Manager) watch(ctx context.Context, name string, st *pluginState) {
	defer close(st.done)
	wait := retryMin
	for {
		lease, err := st.slot.Acquire(ctx)
		delivered := false
		if err == nil {
			delivered, err = m.listAndWatch(ctx, name, st, lease)
			lease.Release()
		}
		if ctx.Err() != nil {
			return
		}
		m.mu.Lock()
		wasServing := st.serving
		st.serving, st.lastErr = false, err
		m.mu.Unlock()
		switch {
		case errors.Is(err, errRetired):
			m.log.Debug("device plugin process retired; watching the next one", "plugin", pluginName(name))
			continue
		case wasServing:
			m.log.Warn("device plugin stream ended; its resources keep their last state", "plugin", pluginName(name), "error", err)
		case !errors.Is(err, pluginhost.ErrUnavailable):
			m.log.Debug("device plugin stream failed", "plugin", pluginName(name), "error", err)
		}
		if delivered {
			wait = retryMin
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, retryMax)
	}
}

// listAndWatch applies one stream's messages until it ends; delivered says
// whether it got any.
func (m *Manager) listAndWatch(ctx context.Context, name string, st *pluginState, lease *pluginhost.Lease) (delivered bool, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-lease.Done:
			cancel(errRetired)
		case <-ctx.Done():
		}
	}()
	stream, err := devicesv1.NewDevicesServiceClient(lease.Conn).ListAndWatch(ctx, &devicesv1.ListAndWatchRequest{})
	if err != nil {
		return false, streamError(ctx, fmt.Errorf("open ListAndWatch: %w", err))
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			return delivered, streamError(ctx, fmt.Errorf("ListAndWatch: %w", err))
		}
		if !delivered {
			m.log.Info("device plugin serves", "plugin", pluginName(name), "resources", len(resp.GetResources()))
		}
		delivered = true
		m.update(name, st, resp.GetResources())
	}
}

// streamError is err, or why the stream's context ended, when it did.
func streamError(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	return err
}
