package priority

import (
	"errors"

	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/evictionengine"
)

// Config is the engine's config plus protect_min_age.
type Config struct {
	evictionengine.Config
	// ProtectMinAge, when above 0, shields pods that have run at least this
	// long: they are evicted only when no younger candidate exists.
	ProtectMinAge sdk.Duration `json:"protect_min_age"`
}

// Validate checks the engine's keys and protect_min_age together.
func (c *Config) Validate() error {
	var errs sdk.ConfigErrors
	if err := c.Config.Validate(); err != nil && !errors.As(err, &errs) {
		return err
	}
	if c.ProtectMinAge.Duration < 0 {
		errs = append(errs, sdk.ConfigError{Path: "protect_min_age",
			Message: "expected a duration of 0s or more, such as \"1h\"; got " + c.ProtectMinAge.String()})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
