package sdk

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration in a plugin's config, written as Go and the
// kubelet write durations: "30s", "5m", "1h30m".
type Duration struct{ time.Duration }

// UnmarshalJSON accepts "30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("expected a duration such as \"30s\", got %s", b)
	}
	parsed, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("expected a duration such as \"30s\", got %q", s)
	}
	d.Duration = parsed
	return nil
}

// MarshalJSON writes the duration as "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }
