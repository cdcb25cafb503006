package evictionengine

import (
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// conditionText is a pressure condition's reason and message for each
// status, as the kubelet's node status setters write them
// (pkg/kubelet/nodestatus/setters.go).
type conditionText struct {
	trueReason, trueMessage   string
	falseReason, falseMessage string
}

var conditionTexts = map[string]conditionText{
	ConditionMemoryPressure: {
		"KubeletHasInsufficientMemory", "kubelet has insufficient memory available",
		"KubeletHasSufficientMemory", "kubelet has sufficient memory available",
	},
	ConditionDiskPressure: {
		"KubeletHasDiskPressure", "kubelet has disk pressure",
		"KubeletHasNoDiskPressure", "kubelet has no disk pressure",
	},
	ConditionPIDPressure: {
		"KubeletHasInsufficientPID", "kubelet has insufficient PID available",
		"KubeletHasSufficientPID", "kubelet has sufficient PID available",
	},
}

// conditionsOf lists the conditions the thresholds drive, in the fixed order.
func conditionsOf(thresholds []Threshold) []string {
	var out []string
	for _, condition := range pressureConditions {
		for _, t := range thresholds {
			if signals[t.Signal].condition == condition {
				out = append(out, condition)
				break
			}
		}
	}
	return out
}

// holdConditions records the conditions observed now and returns those seen
// within the transition period, so that a condition does not flap while the
// signal hovers around its threshold (upstream nodeConditionsLastObservedAt
// and nodeConditionsObservedSince). Unlike upstream, a condition observed
// now is active even with a transition period of 0s.
func holdConditions(observed []string, lastObserved map[string]time.Time, period time.Duration, now time.Time) (active []string, updated map[string]time.Time) {
	updated = map[string]time.Time{}
	for condition, at := range lastObserved {
		if _, known := conditionTexts[condition]; known {
			updated[condition] = at
		}
	}
	for _, condition := range observed {
		updated[condition] = now
	}
	for _, condition := range pressureConditions {
		if at, ok := updated[condition]; ok && (slices.Contains(observed, condition) || now.Sub(at) < period) {
			active = append(active, condition)
		}
	}
	return active, updated
}

// nodeConditions are the three pressure conditions for the node status. A
// condition keeps the node's last transition time while its status holds.
func nodeConditions(active []string, previous []*typesv1.NodeCondition, now time.Time) []*typesv1.NodeCondition {
	out := make([]*typesv1.NodeCondition, 0, len(pressureConditions))
	for _, condition := range pressureConditions {
		text := conditionTexts[condition]
		c := &typesv1.NodeCondition{Type: condition, Status: "False", Reason: text.falseReason, Message: text.falseMessage}
		if slices.Contains(active, condition) {
			c.Status, c.Reason, c.Message = "True", text.trueReason, text.trueMessage
		}
		c.LastTransitionTime = timestamppb.New(now)
		for _, p := range previous {
			if p.GetType() == condition && p.GetStatus() == c.Status && p.GetLastTransitionTime() != nil {
				c.LastTransitionTime = p.GetLastTransitionTime()
			}
		}
		out = append(out, c)
	}
	return out
}
