package evictionengine

import (
	"encoding/json"
	"fmt"
	"time"
)

// stateVersion is bumped when the persisted shape changes incompatibly.
const stateVersion = 1

// state is what the engine remembers between cycles; the core keeps it as
// opaque bytes, so a restarted plugin carries on where it was. It holds what
// upstream keeps in the eviction manager's fields.
type state struct {
	Version int `json:"version"`
	// FirstObserved is when each currently met threshold was first met, by
	// threshold key (thresholdsFirstObservedAt): soft grace periods run from it.
	FirstObserved map[string]time.Time `json:"first_observed,omitempty"`
	// Met lists the thresholds that drove eviction last cycle (thresholdsMet);
	// they stay met until their minimum reclaim is satisfied.
	Met []string `json:"met,omitempty"`
	// ConditionLastObserved is when each pressure condition's thresholds were
	// last met (nodeConditionsLastObservedAt).
	ConditionLastObserved map[string]time.Time `json:"condition_last_observed,omitempty"`
	// StatsTime is the time of the stats each signal was last evaluated on
	// (lastObservations); a threshold evicts only on newer stats.
	StatsTime map[Signal]time.Time `json:"stats_time,omitempty"`
}

// decodeState reads the state a request carries. Empty bytes are a first
// cycle. Bytes that cannot be read start afresh: refusing them would stop
// eviction for good, since the core hands back whatever was last returned.
func decodeState(raw []byte) (state, error) {
	fresh := state{Version: stateVersion}
	if len(raw) == 0 {
		return fresh, nil
	}
	var st state
	if err := json.Unmarshal(raw, &st); err != nil {
		return fresh, fmt.Errorf("the eviction state from the last cycle is unreadable, starting afresh (grace periods and pressure history restart): %v", err)
	}
	if st.Version != stateVersion {
		return fresh, fmt.Errorf("the eviction state from the last cycle has version %d, this plugin reads version %d; starting afresh (grace periods and pressure history restart)", st.Version, stateVersion)
	}
	return st, nil
}

func (st state) encode() ([]byte, error) {
	raw, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encode the eviction state: %w", err)
	}
	return raw, nil
}
