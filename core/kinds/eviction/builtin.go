package eviction

import (
	"context"
	"errors"
	"fmt"

	"github.com/microlet/microlet/core/pluginhost"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	"github.com/microlet/microlet/sdk/evictionengine"
	"github.com/microlet/microlet/sdk/evictionengine/kubelet"
)

// builtinName labels the built-in evictor's cycles.
const builtinName = "builtin"

// newBuiltin builds the evictor the core falls back on: the engine of the
// kubelet strategy (the same code as microlet-eviction-kubelet, compiled in)
// with the kubelet's default hard thresholds and nothing else, so that a
// node without its eviction plugin still survives what the kubelet's
// defaults would have caught.
func newBuiltin() (*evictionengine.Engine, error) {
	var cfg evictionengine.Config
	cfg.SetDefaults()
	e, err := kubelet.New(&cfg)
	if err != nil {
		return nil, fmt.Errorf("eviction: the built-in evictor's default thresholds do not parse: %w", err)
	}
	return e, nil
}

const (
	fallbackStarted = "no eviction plugin serves: the built-in evictor decides, with the kubelet's default hard thresholds"
	fallbackEnded   = "the eviction plugin serves again and decides"
)

// answer is one Synchronize answer and who gave it.
type answer struct {
	resp *evictionv1.SynchronizeResponse
	// strategy is the plugin's name, or builtinName.
	strategy string
}

// synchronize asks the plugin to decide on req, or the built-in evictor
// while no plugin serves; req.State is set to the deciding strategy's last
// state, and the answer's state and conditions are kept.
func (m *Manager) synchronize(ctx context.Context, req *evictionv1.SynchronizeRequest) (answer, error) {
	m.mu.Lock()
	req.State = m.pluginState
	m.mu.Unlock()
	resp, err := pluginhost.Ask(ctx, m.opts.Plugin, "eviction plugin Synchronize", func(ctx context.Context, c evictionConn) (*evictionv1.SynchronizeResponse, error) {
		return c.Client.Synchronize(ctx, req)
	})
	if err == nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.logChange(&m.fallback, "", fallbackStarted, fallbackEnded)
		m.pluginState = resp.GetState()
		m.pluginConditions = pressureOnly(resp.GetConditions())
		m.conditions = pressureOnly(resp.GetConditions())
		return answer{resp: resp, strategy: m.opts.Plugin.Name()}, nil
	}
	if !errors.Is(err, pluginhost.ErrUnavailable) {
		// A plugin that serves but fails decides nothing this cycle; the
		// built-in evictor is for a plugin that is absent, not one that is
		// wrong.
		return answer{}, err
	}

	m.mu.Lock()
	req.State = m.builtinState
	m.logChange(&m.fallback, reason(err), fallbackStarted, fallbackEnded)
	m.mu.Unlock()
	res, berr := m.builtin.Synchronize(req)
	if berr != nil {
		return answer{}, fmt.Errorf("built-in evictor: %w", berr)
	}
	for _, w := range res.Warnings {
		m.log.Warn("built-in evictor", "warning", w)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.builtinState = res.Response.GetState()
	m.conditions = mergeConditions(m.pluginConditions, res.Response.GetConditions())
	return answer{resp: res.Response, strategy: builtinName}, nil
}
