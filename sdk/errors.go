package sdk

import (
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Errors a plugin returns carry gRPC status codes with fixed meanings, so the
// core can tell what to do without reading messages.

// Retryable says the call may succeed if tried again later.
func Retryable(format string, args ...any) error {
	return status.Errorf(codes.Unavailable, format, args...)
}

// Invalid says the request is wrong; trying again will not help.
func Invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// Unsupported says the plugin does not do this.
func Unsupported(format string, args ...any) error {
	return status.Errorf(codes.Unimplemented, format, args...)
}

// InvalidConfig is an INVALID_ARGUMENT status whose google.rpc.BadRequest
// details name every offending key.
func InvalidConfig(errs ConfigErrors) error {
	st := status.New(codes.InvalidArgument, "invalid config: "+errs.Error())
	br := &errdetails.BadRequest{}
	for _, e := range errs {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: e.Path, Description: e.Message})
	}
	if withDetails, err := st.WithDetails(br); err == nil {
		st = withDetails
	}
	return st.Err()
}

// asStatus keeps an error that already is a gRPC status and gives any other
// the code fallback.
func asStatus(err error, fallback codes.Code) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	var errs ConfigErrors
	if errors.As(err, &errs) {
		return InvalidConfig(errs)
	}
	return status.Error(fallback, fmt.Sprint(err))
}
