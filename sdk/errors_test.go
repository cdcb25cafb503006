package sdk

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestAsStatus(t *testing.T) {
	for _, c := range []struct {
		name        string
		err         error
		wantCode    codes.Code
		wantMessage string
		wantFields  []string // google.rpc.BadRequest field violations
	}{
		{"a status keeps its code", Retryable("busy"), codes.Unavailable, "busy", nil},
		{"a wrapped status keeps its code and the whole message", fmt.Errorf("scan images: %w", Unsupported("no imagefs")), codes.Unimplemented, "scan images: no imagefs", nil},
		{"plain error gets the fallback", errors.New("boom"), codes.Unknown, "boom", nil},
		{"deadline", fmt.Errorf("stat /var: %w", context.DeadlineExceeded), codes.DeadlineExceeded, "stat /var: context deadline exceeded", nil},
		{"canceled", context.Canceled, codes.Canceled, "context canceled", nil},
		{"config errors", ConfigErrors{{Path: "a", Message: "bad"}, {Path: "b.c", Message: "worse"}}, codes.InvalidArgument, "invalid config: a: bad; b.c: worse", []string{"a", "b.c"}},
		{"one config error", ConfigError{Path: "a", Message: "bad"}, codes.InvalidArgument, "invalid config: a: bad", []string{"a"}},
		{"InvalidConfig keeps its details", InvalidConfig(ConfigErrors{{Path: "x", Message: "y"}}), codes.InvalidArgument, "invalid config: x: y", []string{"x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := status.Convert(asStatus(c.err, codes.Unknown))
			if st.Code() != c.wantCode || st.Message() != c.wantMessage {
				t.Errorf("asStatus = %v %q, want %v %q", st.Code(), st.Message(), c.wantCode, c.wantMessage)
			}
			var fields []string
			for _, d := range st.Details() {
				if br, ok := d.(*errdetails.BadRequest); ok {
					for _, v := range br.GetFieldViolations() {
						fields = append(fields, v.GetField())
					}
				}
			}
			if fmt.Sprint(fields) != fmt.Sprint(c.wantFields) {
				t.Errorf("field violations %v, want %v", fields, c.wantFields)
			}
		})
	}
}
