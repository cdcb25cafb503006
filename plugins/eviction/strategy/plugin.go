// Package strategy serves an eviction engine through the SDK: it builds the
// engine when the core configures the plugin and answers the eviction
// service's calls with it, logging what the engine reports.
package strategy

import (
	"context"
	"sync/atomic"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/evictionengine"
)

// Decider is what a plugin answers with: an *evictionengine.Engine, or a
// strategy built around one.
type Decider interface {
	Synchronize(*evictionv1.SynchronizeRequest) (evictionengine.Result, error)
	Admit(*evictionv1.AdmitRequest) (*evictionv1.AdmitResponse, error)
	Reservation(*evictionv1.GetNodeReservationRequest) *evictionv1.GetNodeReservationResponse
	Thresholds() []evictionengine.Threshold
}

// Plugin is an eviction plugin whose config type is C. It implements
// sdk.Plugin[C], sdk.EvictionStrategy, sdk.EvictionAdmitter and sdk.NodeReserver.
type Plugin[C any] struct {
	build  func(*C) (Decider, error)
	engine atomic.Pointer[Decider]
}

// New returns a plugin that builds its decider with build.
func New[C any, D Decider](build func(*C) (D, error)) *Plugin[C] {
	return &Plugin[C]{build: func(c *C) (Decider, error) { return build(c) }}
}

// Configure builds the engine from the decoded and validated config.
func (p *Plugin[C]) Configure(_ context.Context, cfg *C, _ *sdk.Host) error {
	e, err := p.build(cfg)
	if err != nil {
		return err
	}
	p.engine.Store(&e)
	var thresholds []string
	for _, t := range e.Thresholds() {
		thresholds = append(thresholds, t.String())
	}
	sdk.Log().Info("eviction thresholds configured", "thresholds", thresholds)
	return nil
}

// Synchronize makes one eviction decision.
func (p *Plugin[C]) Synchronize(_ context.Context, req *evictionv1.SynchronizeRequest) (*evictionv1.SynchronizeResponse, error) {
	e, err := p.configured()
	if err != nil {
		return nil, err
	}
	res, err := e.Synchronize(req)
	if err != nil {
		return nil, err
	}
	for _, w := range res.Warnings {
		sdk.Log().Warn(w)
	}
	return res.Response, nil
}

// Admit decides whether a pod may start under the node's pressure.
func (p *Plugin[C]) Admit(_ context.Context, req *evictionv1.AdmitRequest) (*evictionv1.AdmitResponse, error) {
	e, err := p.configured()
	if err != nil {
		return nil, err
	}
	return e.Admit(req)
}

// GetNodeReservation says what the hard thresholds hold back from pods.
func (p *Plugin[C]) GetNodeReservation(_ context.Context, req *evictionv1.GetNodeReservationRequest) (*evictionv1.GetNodeReservationResponse, error) {
	e, err := p.configured()
	if err != nil {
		return nil, err
	}
	return e.Reservation(req), nil
}

func (p *Plugin[C]) configured() (Decider, error) {
	e := p.engine.Load()
	if e == nil {
		return nil, sdk.Retryable("the eviction plugin is not configured yet")
	}
	return *e, nil
}
