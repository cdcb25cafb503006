package pluginhost

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/microlet/microlet/sdk"
)

// ConfigError is one problem a plugin found in its config block: the path of
// the key inside the block (empty for the block) and the plugin's message.
// It is the SDK's type, the one plugins answer with.
type ConfigError = sdk.ConfigError

// InvalidConfigError is a plugin's refusal of its config block.
type InvalidConfigError struct {
	Errors sdk.ConfigErrors
}

func (e *InvalidConfigError) Error() string {
	return "invalid config: " + e.Errors.Error()
}

// configErrorsOf turns an INVALID_ARGUMENT status with google.rpc.BadRequest
// details (the SDK's answer to a bad config) into an InvalidConfigError, so
// the operator reads the plugin's own messages; other errors are kept.
func configErrorsOf(err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.InvalidArgument {
		return err
	}
	var errs sdk.ConfigErrors
	for _, detail := range st.Details() {
		if br, ok := detail.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				errs = append(errs, ConfigError{Path: v.GetField(), Message: v.GetDescription()})
			}
		}
	}
	if len(errs) == 0 {
		errs = sdk.ConfigErrors{{Message: st.Message()}}
	}
	return &InvalidConfigError{Errors: errs}
}
