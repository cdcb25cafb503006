package devices

import (
	"context"
	"errors"
	"fmt"

	"github.com/microlet/microlet/core/pluginhost"
	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

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
// the stream fails (pluginhost.Follow). Between streams the plugin's
// resources keep their last state.
func (m *Manager) watch(ctx context.Context, name string, st *pluginState) {
	defer close(st.done)
	pluginhost.Follow(ctx, st.slot, func(ctx context.Context, lease *pluginhost.Lease) (bool, error) {
		return m.listAndWatch(ctx, name, st, lease)
	}, func(err error) {
		m.mu.Lock()
		wasServing := st.serving
		st.serving, st.lastErr = false, err
		m.mu.Unlock()
		switch {
		case errors.Is(err, pluginhost.ErrRetired):
			m.log.Debug("device plugin process retired; watching the next one", "plugin", pluginName(name))
		case wasServing:
			m.log.Warn("device plugin stream ended; its resources keep their last state", "plugin", pluginName(name), "error", err)
		case !errors.Is(err, pluginhost.ErrUnavailable):
			m.log.Debug("device plugin stream failed", "plugin", pluginName(name), "error", err)
		}
	})
}

// listAndWatch applies one stream's messages until it ends; delivered says
// whether it got any.
func (m *Manager) listAndWatch(ctx context.Context, name string, st *pluginState, lease *pluginhost.Lease) (delivered bool, err error) {
	stream, err := devicesv1.NewDevicesServiceClient(lease.Conn).ListAndWatch(ctx, &devicesv1.ListAndWatchRequest{})
	if err != nil {
		return false, fmt.Errorf("open ListAndWatch: %w", err)
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			return delivered, fmt.Errorf("ListAndWatch: %w", err)
		}
		if !delivered {
			m.log.Info("device plugin serves", "plugin", pluginName(name), "resources", len(resp.GetResources()))
		}
		delivered = true
		m.update(name, st, resp.GetResources())
	}
}
