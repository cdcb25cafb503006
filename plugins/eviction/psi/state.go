package psi

import (
	"encoding/json"
	"fmt"
	"time"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// state is what the strategy hands the core to keep between cycles: the
// engine's own state, verbatim, and the last eviction for pressure.
type state struct {
	Engine []byte        `json:"engine,omitempty"`
	Last   *lastEviction `json:"last,omitempty"`
}

// lastEviction is when the strategy last evicted for pressure, with the
// stall totals (µs, by line) of the node and of each pod then.
type lastEviction struct {
	At   time.Time                    `json:"at"`
	Node map[string]uint64            `json:"node,omitempty"`
	Pods map[string]map[string]uint64 `json:"pods,omitempty"`
}

// decodeState reads the state back; unreadable state is replaced (with a
// warning), as the engine does, since refusing it would stop eviction.
func decodeState(raw []byte) (state, string) {
	var st state
	if len(raw) == 0 {
		return st, ""
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return state{}, fmt.Sprintf("the psi strategy's state is unreadable and starts afresh: %v", err)
	}
	return st, ""
}

// record is the totals at an eviction made now.
func record(req *evictionv1.SynchronizeRequest, now time.Time) *lastEviction {
	out := &lastEviction{At: now, Node: totals(req.GetNodeStats().GetMemory().GetPsi()), Pods: map[string]map[string]uint64{}}
	for _, ps := range req.GetPodStats() {
		if t := totals(ps.GetMemory().GetPsi()); t != nil {
			out.Pods[ps.GetPodRef().GetUid()] = t
		}
	}
	return out
}

// totals are psi's stall totals by line; nil without psi.
func totals(psi *typesv1.PSIStats) map[string]uint64 {
	if psi == nil {
		return nil
	}
	out := map[string]uint64{}
	if s := psi.GetSome(); s != nil {
		out["some"] = s.GetTotal()
	}
	if f := psi.GetFull(); f != nil {
		out["full"] = f.GetTotal()
	}
	return out
}
