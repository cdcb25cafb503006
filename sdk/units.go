package sdk

import (
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Quantity is a Kubernetes quantity ("100Mi", "0.5", "250m") in a plugin's
// config. It decodes from a string or a number.
type Quantity struct{ resource.Quantity }

// MustParseQuantity parses s or panics; for defaults.
func MustParseQuantity(s string) Quantity { return Quantity{resource.MustParse(s)} }

// UnmarshalJSON accepts "100Mi" or 100.
func (q *Quantity) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("expected a quantity such as \"100Mi\", got %s", b)
		}
		s = n.String()
	}
	parsed, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("expected a quantity such as \"100Mi\", got %q", s)
	}
	q.Quantity = parsed
	return nil
}

// Duration is a time.Duration in a plugin's config, written "30s", "5m".
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
