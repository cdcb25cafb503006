package pluginhost

import (
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ConfigError is one problem a plugin found in its config block.
type ConfigError struct {
	// Path is the dotted key inside the block; empty for the whole block.
	Path string
	// Message says what is wrong and what was expected, in the plugin's words.
	Message string
}

func (e ConfigError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// InvalidConfigError is a plugin's refusal of its config block.
type InvalidConfigError struct {
	Errors []ConfigError
}

func (e *InvalidConfigError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, ce := range e.Errors {
		msgs[i] = ce.Error()
	}
	return "invalid config: " + strings.Join(msgs, "; ")
}

// configErrorsOf turns an INVALID_ARGUMENT status with google.rpc.BadRequest
// details (the SDK's answer to a bad config) into an InvalidConfigError, so
// the operator reads the plugin's own messages; other errors are kept.
func configErrorsOf(err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.InvalidArgument {
		return err
	}
	var errs []ConfigError
	for _, detail := range st.Details() {
		if br, ok := detail.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				errs = append(errs, ConfigError{Path: v.GetField(), Message: v.GetDescription()})
			}
		}
	}
	if len(errs) == 0 {
		errs = []ConfigError{{Message: st.Message()}}
	}
	return &InvalidConfigError{Errors: errs}
}
