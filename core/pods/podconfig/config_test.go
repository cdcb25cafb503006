package podconfig

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/microlet/microlet/core/pods/podsource"
)

// scriptedSource sends its updates, then waits for the end.
type scriptedSource struct {
	name    string
	updates []podsource.Update
}

func (s *scriptedSource) Name() string { return s.name }

func (s *scriptedSource) Run(ctx context.Context, out chan<- podsource.Update) {
	for _, u := range s.updates {
		select {
		case out <- u:
		case <-ctx.Done():
			return
		}
	}
	<-ctx.Done()
}

func TestNewRejectsBadSourceNames(t *testing.T) {
	tests := []struct {
		names []string
		want  string
	}{
		{[]string{"file", "file"}, `two pod sources named "file"`},
		{[]string{""}, "pod source with an empty name"},
	}
	for _, tt := range tests {
		var sources []podsource.Source
		for _, n := range tt.names {
			sources = append(sources, &scriptedSource{name: n})
		}
		if _, err := New(hclog.NewNullLogger(), sources...); err == nil || err.Error() != tt.want {
			t.Errorf("New(%v): %v; want %q", tt.names, err, tt.want)
		}
	}
}

func TestRun(t *testing.T) {
	file := &scriptedSource{name: "file", updates: []podsource.Update{
		update("file", podsource.OpSet, pod("a", "1")),
	}}
	// A source cannot speak for another: its updates carry its own name.
	push := &scriptedSource{name: "push", updates: []podsource.Update{
		update("file", podsource.OpSet, pod("b", "2")),
	}}
	c, err := New(hclog.NewNullLogger(), file, push)
	if err != nil {
		t.Fatal(err)
	}
	seen := sets.New[string]()
	if c.SeenAllSources(seen) {
		t.Error("SeenAllSources before any update")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		c.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	var got []string
	timeout := time.After(30 * time.Second)
	for len(got) < 2 {
		select {
		case u := <-c.Updates():
			seen.Insert(u.Source)
			got = append(got, describe([]PodUpdate{u})...)
		case <-timeout:
			t.Fatalf("got %v; want two updates", got)
		}
	}
	want := map[string]bool{"ADD file default/a:1": true, "ADD push default/b:2": true}
	for _, g := range got {
		if !want[g] {
			t.Errorf("unexpected update %q; want %v", g, strings.Join([]string{"ADD file default/a:1", "ADD push default/b:2"}, ", "))
		}
	}
	if !c.SeenAllSources(seen) {
		t.Error("SeenAllSources false after both sources sent their sets")
	}
	if c.SeenAllSources(sets.New("file")) {
		t.Error("SeenAllSources true though the syncLoop has not seen push")
	}

	cancel()
	<-done
	if _, open := <-c.Updates(); open {
		t.Error("Updates still open after Run returned")
	}
}
