package evictionengine

import (
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// Reservation says what the hard thresholds hold back from pods, for node
// allocatable (upstream hardEvictionReservation): memory.available against
// memory capacity, and, as current upstream also does, nodefs.available
// against ephemeral-storage capacity. A resource whose capacity the request
// does not give is left out.
func (e *Engine) Reservation(req *evictionv1.GetNodeReservationRequest) *evictionv1.GetNodeReservationResponse {
	capacity := req.GetCapacity()
	reserved := &typesv1.ResourceList{}
	for _, t := range e.thresholds {
		if !t.Hard() {
			continue
		}
		switch t.Signal {
		case SignalMemoryAvailable:
			if c, ok := lookup(memoryField(capacity)); ok {
				reserved.MemoryBytes = ptr(t.Value.resolve(c))
			}
		case SignalNodeFsAvailable:
			if c, ok := lookup(ephemeralStorageField(capacity)); ok {
				reserved.EphemeralStorageBytes = ptr(t.Value.resolve(c))
			}
		}
	}
	return &evictionv1.GetNodeReservationResponse{Reserved: reserved}
}

func ptr[T any](v T) *T { return &v }
