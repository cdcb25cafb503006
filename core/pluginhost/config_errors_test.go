package pluginhost

import (
	"errors"
	"slices"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestConfigErrorsOf(t *testing.T) {
	withDetails, err := status.New(codes.InvalidArgument, "invalid config: a: bad; b.c: worse").WithDetails(&errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: "a", Description: "bad"},
			{Field: "b.c", Description: "worse"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		err     error
		want    []ConfigError // nil: err is returned unchanged
		wantMsg string
	}{
		{
			name:    "the plugin's findings",
			err:     withDetails.Err(),
			want:    []ConfigError{{Path: "a", Message: "bad"}, {Path: "b.c", Message: "worse"}},
			wantMsg: "invalid config: a: bad; b.c: worse",
		},
		{
			name:    "a refusal without details",
			err:     status.Error(codes.InvalidArgument, "no"),
			want:    []ConfigError{{Message: "no"}},
			wantMsg: "invalid config: no",
		},
		{name: "another code", err: status.Error(codes.Unavailable, "dial the core")},
		{name: "not a status", err: errors.New("broken pipe")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := configErrorsOf(tt.err)
			var invalid *InvalidConfigError
			if tt.want == nil {
				if got != tt.err {
					t.Errorf("got %v, want the error unchanged", got)
				}
				return
			}
			if !errors.As(got, &invalid) || !slices.Equal(invalid.Errors, tt.want) || got.Error() != tt.wantMsg {
				t.Errorf("got %v (%#v), want %q with %+v", got, got, tt.wantMsg, tt.want)
			}
		})
	}
}
