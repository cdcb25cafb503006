package sdk

import (
	"reflect"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	basev1 "github.com/microlet/microlet/proto/microlet/base/v1"
)

// ConfigError is one problem in a plugin's config block.
type ConfigError struct {
	// Path is the dotted key inside the block ("hard.memory_available",
	// "devices[2].path"); empty for the block itself.
	Path string
	// Message says what is wrong and what was expected.
	Message string
}

func (e ConfigError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// ConfigErrors collects every problem found, so an operator sees them all at once.
type ConfigErrors []ConfigError

func (es ConfigErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

func (es ConfigErrors) proto() []*basev1.ConfigError {
	out := make([]*basev1.ConfigError, len(es))
	for i, e := range es {
		out[i] = &basev1.ConfigError{Path: e.Path, Message: e.Message}
	}
	return out
}

// defaulter and validator are optional methods of a plugin's config type.
type defaulter interface{ SetDefaults() }
type validator interface{ Validate() error }

// decodeConfig decodes a config block into a new C: SetDefaults first (if
// C has it), then the block (strictly: unknown keys and type errors are
// reported, every one of them, each with its key path), then C's Validate
// (if it has one, and only when the block decoded cleanly).
func decodeConfig[C any](block *structpb.Struct) (*C, ConfigErrors) {
	cfg := new(C)
	if d, ok := any(cfg).(defaulter); ok {
		d.SetDefaults()
	}
	var dec configDecoder
	dec.decode("", block.AsMap(), reflect.ValueOf(cfg).Elem())
	if len(dec.errs) > 0 {
		return nil, dec.errs
	}
	if v, ok := any(cfg).(validator); ok {
		if err := v.Validate(); err != nil {
			return nil, configErrorsOf(err)
		}
	}
	return cfg, nil
}

// configErrorsOf turns what a Validate method (or Configure) returned into
// ConfigErrors: a ConfigErrors or ConfigError as they are, errors.Join of
// several flattened, anything else as one error about the whole block.
func configErrorsOf(err error) ConfigErrors {
	switch e := err.(type) {
	case ConfigErrors:
		return e
	case ConfigError:
		return ConfigErrors{e}
	case *ConfigError:
		return ConfigErrors{*e}
	case interface{ Unwrap() []error }:
		var all ConfigErrors
		for _, inner := range e.Unwrap() {
			all = append(all, configErrorsOf(inner)...)
		}
		return all
	}
	return ConfigErrors{{Message: err.Error()}}
}
