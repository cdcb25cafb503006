package apiclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestOutageLogsOncePerOutage(t *testing.T) {
	var buf bytes.Buffer
	o := NewOutage(hclog.New(&hclog.LoggerOptions{Output: &buf}), "watching")
	refused := errors.New("connection refused")
	o.Observe(nil)
	for range 5 {
		o.Observe(refused)
		o.WatchErrorHandler(context.Background(), nil, refused)
	}
	if !o.Failing() {
		t.Fatal("not failing after failed calls")
	}
	o.WatchErrorHandler(context.Background(), nil, io.EOF)
	o.WatchErrorHandler(context.Background(), nil, apierrors.NewResourceExpired("too old"))
	o.Observe(nil)
	o.Observe(nil)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "cannot be reached") || !strings.Contains(lines[1], "reachable again") {
		t.Fatalf("log:\n%s\nwant one warning and one recovery", buf.String())
	}
}

// TestOutagesLogOncePerNode: several parts losing the API server make one
// warning, and the recovery is logged once the last of them succeeds.
func TestOutagesLogOncePerNode(t *testing.T) {
	var buf bytes.Buffer
	all := NewOutages(hclog.New(&hclog.LoggerOptions{Output: &buf}))
	pods, statuses, node := all.Part("watching pods"), all.Part("writing statuses"), all.Part("posting the Node")
	refused := errors.New("connection refused")
	for range 3 {
		pods.Observe(refused)
		statuses.Observe(refused)
		node.Observe(refused)
	}
	pods.Observe(nil)
	statuses.Observe(nil)
	if strings.Contains(buf.String(), "reachable again") {
		t.Fatalf("recovery logged while a part still fails:\n%s", buf.String())
	}
	node.Observe(nil)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `while="watching pods"`) || !strings.Contains(lines[1], "reachable again") {
		t.Fatalf("log:\n%s\nwant one warning (from the first part) and one recovery", buf.String())
	}
}
