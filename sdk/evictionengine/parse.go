package evictionengine

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/microlet/microlet/sdk"
)

// The config lists take statements exactly as the kubelet's flags do:
// --eviction-hard / --eviction-soft take "<signal><<value>", and
// --eviction-soft-grace-period / --eviction-minimum-reclaim take
// "<signal>=<value>". Parsing follows pkg/kubelet/eviction/helpers.go
// (ParseThresholdConfig) except that it reports every problem at once,
// rejects a signal listed twice (upstream maps keep the last silently), and
// rejects grace periods and minimum reclaims that apply to no threshold.

// statement is one parsed "<signal><op><value>" entry of a list.
type statement struct {
	signal Signal
	text   string
	// value is unset for a "0%" or "100%" threshold, which upstream ignores;
	// writing one is how an operator switches a default threshold off.
	value *Value
}

// statementList is a parsed config list, in the operator's order.
type statementList []statement

func (l statementList) find(s Signal) (statement, bool) {
	for _, st := range l {
		if st.signal == s {
			return st, true
		}
	}
	return statement{}, false
}

// parser collects the problems of one config block.
type parser struct{ errs sdk.ConfigErrors }

func (p *parser) fail(key, text, format string, args ...any) {
	p.errs = append(p.errs, sdk.ConfigError{Path: key, Message: fmt.Sprintf("%q: ", text) + fmt.Sprintf(format, args...)})
}

// split cuts a statement at op and checks its signal. It reports a problem
// and returns false when the statement is malformed.
func (p *parser) split(key, text, op, example string) (Signal, string, bool) {
	name, value, found := strings.Cut(text, op)
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !found || name == "" || value == "" {
		p.fail(key, text, "expected <signal>%s<value>, such as %q", op, example)
		return "", "", false
	}
	signal := Signal(name)
	if _, ok := signals[signal]; !ok {
		if strings.HasPrefix(name, "containerfs.") {
			p.fail(key, text, "containerfs signals cannot be set: they follow nodefs or imagefs, as in the kubelet")
		} else {
			p.fail(key, text, "unsupported eviction signal %q; supported: %s", name, supportedSignalList())
		}
		return "", "", false
	}
	return signal, value, true
}

// add appends a statement unless its signal is already listed.
func (p *parser) add(key string, list statementList, st statement) statementList {
	if _, dup := list.find(st.signal); dup {
		p.fail(key, st.text, "%s is listed twice in %s", st.signal, key)
		return list
	}
	return append(list, st)
}

// thresholds parses a list of "<signal><<value>" statements (hard or soft).
func (p *parser) thresholds(key string, texts []string) statementList {
	var list statementList
	for _, text := range texts {
		signal, raw, ok := p.split(key, text, "<", "memory.available<100Mi")
		if !ok {
			continue
		}
		st := statement{signal: signal, text: text}
		if raw == "0%" || raw == "100%" {
			list = p.add(key, list, st)
			continue
		}
		v, isPercent, ok := p.value(key, text, raw, signal)
		switch {
		case !ok:
			continue
		case isPercent && (v.Percentage <= 0 || v.Percentage > 1):
			p.fail(key, text, "a percentage threshold must be greater than 0%% and at most 100%%")
			continue
		case !isPercent && v.Quantity <= 0:
			p.fail(key, text, "the threshold must be greater than 0")
			continue
		}
		st.value = &v
		list = p.add(key, list, st)
	}
	return list
}

// minimumReclaims parses a list of "<signal>=<value>" statements.
func (p *parser) minimumReclaims(key string, texts []string) statementList {
	var list statementList
	for _, text := range texts {
		signal, raw, ok := p.split(key, text, "=", "memory.available=0Mi")
		if !ok {
			continue
		}
		v, isPercent, ok := p.value(key, text, raw, signal)
		switch {
		case !ok:
			continue
		case isPercent && v.Percentage <= 0:
			p.fail(key, text, "a percentage minimum reclaim must be greater than 0%%")
			continue
		case !isPercent && v.Quantity < 0:
			p.fail(key, text, "a minimum reclaim must not be negative")
			continue
		}
		list = p.add(key, list, statement{signal: signal, text: text, value: &v})
	}
	return list
}

// gracePeriod is one parsed "<signal>=<duration>" statement.
type gracePeriod struct {
	signal Signal
	text   string
	period time.Duration
}

// gracePeriodList is a parsed soft_grace_period list, in the operator's order.
type gracePeriodList []gracePeriod

func (l gracePeriodList) find(s Signal) (gracePeriod, bool) {
	for _, g := range l {
		if g.signal == s {
			return g, true
		}
	}
	return gracePeriod{}, false
}

// gracePeriods parses a list of "<signal>=<duration>" statements.
func (p *parser) gracePeriods(key string, texts []string) gracePeriodList {
	var list gracePeriodList
	for _, text := range texts {
		signal, raw, ok := p.split(key, text, "=", "memory.available=1m30s")
		if !ok {
			continue
		}
		d, err := time.ParseDuration(raw)
		if err != nil {
			p.fail(key, text, "%q is not a duration such as \"1m30s\"", raw)
			continue
		}
		if d <= 0 {
			p.fail(key, text, "a grace period must be greater than 0s; a threshold that acts at once belongs in hard")
			continue
		}
		if _, dup := list.find(signal); dup {
			p.fail(key, text, "%s is listed twice in %s", signal, key)
			continue
		}
		list = append(list, gracePeriod{signal: signal, text: text, period: d})
	}
	return list
}

// value parses a quantity ("100Mi", "1k") or a percentage ("10%", "7.5%").
func (p *parser) value(key, text, raw string, signal Signal) (v Value, isPercent, ok bool) {
	if number, found := strings.CutSuffix(raw, "%"); found {
		f, err := strconv.ParseFloat(number, 32)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			p.fail(key, text, "%q is not a percentage such as \"10%%\"", raw)
			return Value{}, true, false
		}
		return Value{Percentage: float32(f) / 100, text: raw}, true, true
	}
	q, err := parseQuantity(raw)
	if err != nil {
		unit := "a quantity such as \"100Mi\""
		if !signal.countsBytes() {
			unit = "a count such as \"1000\" or \"5k\""
		}
		p.fail(key, text, "%q is neither %s nor a percentage such as \"10%%\"", raw, unit)
		return Value{}, false, false
	}
	return Value{Quantity: q.Value(), text: q.String()}, false, true
}

// parseQuantity parses a Kubernetes quantity with the SDK's parser, the one
// config blocks are decoded with.
func parseQuantity(s string) (sdk.Quantity, error) {
	var q sdk.Quantity
	raw, err := json.Marshal(s)
	if err != nil {
		return q, err
	}
	err = json.Unmarshal(raw, &q)
	return q, err
}
