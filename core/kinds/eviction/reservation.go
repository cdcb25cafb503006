package eviction

import (
	"context"
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/microlet/microlet/core/pluginhost"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
)

// Reservation says what the hard thresholds hold back from pods, for node
// allocatable (capacity - reserved - hard thresholds): the plugin's answer
// when it gives one. While the plugin does not serve, its last answer
// stands; before it ever answered, without a plugin, or with one that does
// not reserve (no eviction.reservation), the built-in evictor's thresholds
// do (memory.available<100Mi, nodefs.available<10%).
func (m *Manager) Reservation(ctx context.Context, capacity *typesv1.ResourceList) (*typesv1.ResourceList, error) {
	req := &evictionv1.GetNodeReservationRequest{Capacity: capacity}
	resp, err := callOptional(ctx, m.opts.Plugin, "GetNodeReservation", sdk.CapabilityEvictionReservation, func(ctx context.Context, c evictionv1.EvictionServiceClient) (*evictionv1.GetNodeReservationResponse, error) {
		return c.GetNodeReservation(ctx, req)
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case err == nil:
		reserved := resp.GetReserved()
		if reserved == nil {
			reserved = &typesv1.ResourceList{}
		}
		m.pluginReserved = proto.Clone(reserved).(*typesv1.ResourceList)
		return reserved, nil
	case errors.Is(err, pluginhost.ErrUnavailable) && !errors.Is(err, pluginhost.ErrNotConfigured) && m.pluginReserved != nil:
		return proto.Clone(m.pluginReserved).(*typesv1.ResourceList), nil
	case errors.Is(err, pluginhost.ErrUnavailable), errors.Is(err, errNoCapability):
		return m.builtin.Reservation(req).GetReserved(), nil
	}
	return nil, err
}
