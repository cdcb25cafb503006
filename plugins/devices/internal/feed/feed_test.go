package feed

import (
	"context"
	"errors"
	"testing"

	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

func resource(name string, ids ...string) *devicesv1.Resource {
	r := &devicesv1.Resource{Name: name}
	for _, id := range ids {
		r.Devices = append(r.Devices, &devicesv1.Device{Id: id, Healthy: true})
	}
	return r
}

// A stream gets the current set first, then each changed set; an equal
// set published again wakes no stream.
func TestStream(t *testing.T) {
	f := New()
	f.Publish([]*devicesv1.Resource{resource("example.com/a", "1")})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	sets := make(chan []*devicesv1.Resource)
	done := make(chan error, 1)
	go func() {
		done <- f.Stream(ctx, func(rs []*devicesv1.Resource) error {
			sets <- rs
			return nil
		})
	}()
	if got := <-sets; len(got) != 1 || got[0].GetName() != "example.com/a" {
		t.Fatalf("first set %v, want example.com/a", got)
	}

	_, unchanged := f.Current()
	f.Publish([]*devicesv1.Resource{resource("example.com/a", "1")})
	select {
	case <-unchanged:
		t.Fatal("publishing an equal set signalled a change")
	default:
	}

	f.Publish([]*devicesv1.Resource{resource("example.com/a", "1", "2")})
	if got := <-sets; len(got[0].GetDevices()) != 2 {
		t.Fatalf("second set %v, want two devices", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Stream after its context ended = %v, want nil", err)
	}
}

func TestStreamEndsWhenSendFails(t *testing.T) {
	f := New()
	broken := errors.New("stream broken")
	if err := f.Stream(t.Context(), func([]*devicesv1.Resource) error { return broken }); !errors.Is(err, broken) {
		t.Errorf("Stream = %v, want %v", err, broken)
	}
}
