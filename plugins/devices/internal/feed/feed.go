// Package feed is the ListAndWatch side of a device plugin: it holds the
// plugin's current resources and hands every change to each open stream.
package feed

import (
	"context"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"

	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

// Feed holds the resources a plugin offers now. Streams see the latest set:
// a stream that falls behind skips the sets it missed, which ListAndWatch
// allows, since every message replaces the previous one.
type Feed struct {
	mu      sync.Mutex
	current []*devicesv1.Resource
	// changed is closed, and replaced, by every Publish that changes
	// current.
	changed chan struct{}
}

// New is a feed offering no resources yet.
func New() *Feed {
	return &Feed{changed: make(chan struct{})}
}

// Publish makes resources the current set, if it differs from the current
// one. The feed keeps resources: the caller must not change them afterwards.
func (f *Feed) Publish(resources []*devicesv1.Resource) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if slices.EqualFunc(f.current, resources, func(a, b *devicesv1.Resource) bool { return proto.Equal(a, b) }) {
		return
	}
	f.current = resources
	close(f.changed)
	f.changed = make(chan struct{})
}

// Current is the current set and the channel its replacement closes.
func (f *Feed) Current() ([]*devicesv1.Resource, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.current, f.changed
}

// Stream is sdk.DevicePlugin's ListAndWatch: it sends the current set at
// once and again after every change, until ctx ends (nil) or send fails.
func (f *Feed) Stream(ctx context.Context, send func([]*devicesv1.Resource) error) error {
	for {
		resources, changed := f.Current()
		if err := send(resources); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}
