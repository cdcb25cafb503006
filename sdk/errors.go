package sdk

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Errors a plugin returns carry gRPC status codes with fixed meanings
// (microlet.base.v1), so the core can tell what to do without reading
// messages. A plain error from a kind's method is UNKNOWN, from Configure
// INVALID_ARGUMENT; context.DeadlineExceeded and context.Canceled keep
// their own codes.

// Retryable says the call may succeed if tried again later (UNAVAILABLE).
func Retryable(format string, args ...any) error {
	return status.Errorf(codes.Unavailable, format, args...)
}

// Invalid says the request is wrong; trying again will not help
// (INVALID_ARGUMENT).
func Invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// Unsupported says the plugin does not do this (UNIMPLEMENTED).
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

// asStatus turns an error from plugin code into a gRPC status: a status
// (even wrapped) keeps its code and details, the context's errors keep
// theirs, config errors become InvalidConfig, and anything else gets the
// fallback code.
func asStatus(err error, fallback codes.Code) error {
	var inner interface {
		error
		GRPCStatus() *status.Status
	}
	if errors.As(err, &inner) {
		if inner == err {
			return err
		}
		// Wrapped: keep the wrapping words, but not the inner error's
		// "rpc error: code = ... desc = " prefix.
		st := inner.GRPCStatus().Proto()
		st.Message = strings.Replace(err.Error(), inner.Error(), st.GetMessage(), 1)
		return status.FromProto(st).Err()
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	}
	var errs ConfigErrors
	var one ConfigError
	switch {
	case errors.As(err, &errs):
		return InvalidConfig(errs)
	case errors.As(err, &one):
		return InvalidConfig(ConfigErrors{one})
	}
	return status.Error(fallback, err.Error())
}
