package sdk_test

import (
	"context"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

// noConfig is the config type of test plugins that take none.
type noConfig struct{}

// configurable gives a test plugin the Configure every plugin needs.
type configurable struct{}

func (configurable) Configure(context.Context, *noConfig, *sdk.Host) error { return nil }

func info(kind string) sdk.Info {
	return sdk.Info{Kind: kind, Name: "test", Version: "1.2.3"}
}

// wantCode fails the test unless err is a gRPC status with code want.
func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("%s: code %v (%v), want %v", what, got, err, want)
	}
}

// mustConfigure configures h with an empty block.
func mustConfigure(t *testing.T, h *sdktest.Harness) {
	t.Helper()
	if err := h.Configure(nil); err != nil {
		t.Fatalf("Configure: %v", err)
	}
}

// fieldViolations returns the google.rpc.BadRequest details of err as
// path -> description.
func fieldViolations(err error) map[string]string {
	out := map[string]string{}
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				out[v.GetField()] = v.GetDescription()
			}
		}
	}
	return out
}
