package imagegc

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/core/pluginhost"
)

// TestSkippedCyclesAreLogged: an unconfigured plugin is logged once until
// it is configured; a plugin that does not serve, once per skipped cycle.
func TestSkippedCyclesAreLogged(t *testing.T) {
	notConfigured := fmt.Errorf("no imagegc plugin is configured: %w", pluginhost.ErrNotConfigured)
	restarting := fmt.Errorf("%w: restarting", pluginhost.ErrUnavailable)
	for _, tc := range []struct {
		name string
		errs []error
		// lines logged per error, in order
		want []int
	}{
		{"not configured: once", []error{notConfigured, notConfigured, notConfigured}, []int{1, 0, 0}},
		{"not serving: every cycle", []error{restarting, restarting}, []int{1, 1}},
		{"configured again, then removed: logged again", []error{notConfigured, nil, notConfigured}, []int{1, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			m := &Manager{log: hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Info}), skipped: map[string]string{}}
			for i, err := range tc.errs {
				before := strings.Count(out.String(), "\n")
				m.periodic(context.Background(), "containers", func() error { return err })
				if got := strings.Count(out.String(), "\n") - before; got != tc.want[i] {
					t.Errorf("cycle %d (%v): %d lines logged, want %d:\n%s", i, err, got, tc.want[i], out.String())
				}
			}
		})
	}
}
