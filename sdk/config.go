package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	basev1 "github.com/microlet/microlet/proto/microlet/base/v1"
)

// ConfigError is one problem in a plugin's config block.
type ConfigError struct {
	// Path is the dotted key inside the block; empty for the block itself.
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

// decodeConfig decodes a config block into a new C: defaults first, then the
// block (strictly: unknown keys are errors), then C's own validation.
func decodeConfig[C any](block *structpb.Struct) (*C, ConfigErrors) {
	cfg := new(C)
	if d, ok := any(cfg).(defaulter); ok {
		d.SetDefaults()
	}
	if block != nil && len(block.GetFields()) > 0 {
		raw, err := json.Marshal(block.AsMap())
		if err != nil {
			return nil, ConfigErrors{{Message: err.Error()}}
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(cfg); err != nil {
			return nil, ConfigErrors{jsonConfigError(err)}
		}
	}
	if v, ok := any(cfg).(validator); ok {
		if err := v.Validate(); err != nil {
			var errs ConfigErrors
			var one ConfigError
			switch {
			case errors.As(err, &errs):
				return nil, errs
			case errors.As(err, &one):
				return nil, ConfigErrors{one}
			default:
				return nil, ConfigErrors{{Message: err.Error()}}
			}
		}
	}
	return cfg, nil
}

// jsonConfigError turns encoding/json's errors into ones that name the key
// and say what was expected, in the operator's terms.
func jsonConfigError(err error) ConfigError {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return ConfigError{
			Path:    typeErr.Field,
			Message: fmt.Sprintf("expected %s, got %s", describeType(typeErr.Type.String()), typeErr.Value),
		}
	}
	msg := err.Error()
	if key, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return ConfigError{Path: strings.Trim(key, `"`), Message: "unknown key"}
	}
	// Errors from a field's UnmarshalJSON (Quantity, Duration) name no field.
	return ConfigError{Message: strings.TrimPrefix(msg, "json: ")}
}

func describeType(goType string) string {
	switch {
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "a whole number"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map["):
		return "a block of key = value"
	default:
		return goType
	}
}
