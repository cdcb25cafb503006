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
