package imagegc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/microlet/microlet/core/pluginhost"
)

// TestGCFailureEvents: as the kubelet, every failed container collection
// is a ContainerGCFailed event and image collection failing twice in a row
// an ImageGCFailed one; skipped collections are not failures.
func TestGCFailureEvents(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	m := &Manager{opts: Options{Events: rec, NodeName: "node1"}, log: hclog.NewNullLogger(), skipped: map[string]string{}}
	failed := errors.New("runtime down")
	down := fmt.Errorf("%w: restarting", pluginhost.ErrUnavailable)
	for _, step := range []struct {
		what string
		err  error
		want string
	}{
		{"containers", failed, "Warning ContainerGCFailed runtime down"},
		{"containers", nil, ""},
		{"images", failed, ""},
		{"images", down, ""},
		{"images", failed, "Warning ImageGCFailed runtime down"},
		{"images", nil, ""},
		{"images", failed, ""},
	} {
		m.periodic(context.Background(), step.what, func() error { return step.err })
		var got string
		select {
		case got = <-rec.Events:
		default:
		}
		if got != step.want {
			t.Errorf("%s collection failing with %v: event %q, want %q", step.what, step.err, got, step.want)
		}
	}
}

// TestFreeDiskSpaceFailedEvent: a plan that cannot free what the plugin's
// thresholds require is upstream's FreeDiskSpaceFailed on the node.
func TestFreeDiskSpaceFailedEvent(t *testing.T) {
	rt := imageNode(t)
	// Past the high threshold, but every image is too young to go.
	plugin := lruPlugin(t, map[string]any{"high_threshold_percent": 1, "low_threshold_percent": 0, "minimum_age": "1h"})
	m := newManager(t, rt, plugin, deletedPods{}, clocktesting.NewFakePassiveClock(epoch), t.TempDir(), "")
	rec := record.NewFakeRecorder(10)
	rec.IncludeObject = true
	m.opts.Events, m.opts.NodeName = rec, "node1"
	if _, err := m.CollectImages(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-rec.Events:
		if !strings.HasPrefix(got, "Warning FreeDiskSpaceFailed Failed to garbage collect required amount of images.") ||
			!strings.HasSuffix(got, "involvedObject{kind=Node,apiVersion=}") {
			t.Errorf("event %q, want FreeDiskSpaceFailed on the node", got)
		}
	default:
		t.Error("no FreeDiskSpaceFailed event")
	}
}
