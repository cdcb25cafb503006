package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/microlet/microlet/core/node/network"
	"github.com/microlet/microlet/core/runtime/cri"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// cniCheckPeriod matches the runtime's status poll: the two together say
// whether the pod network is ready.
const cniCheckPeriod = cri.DefaultStatusPollInterval

// nodeHealth is whether the runtime and the pod network are ready: the
// runtime's own conditions, plus our reading of the CNI config, which says
// precisely what is wrong (the runtime only says "not initialized").
type nodeHealth struct {
	poller   *cri.StatusPoller
	confDir  string
	binDirs  []string
	cniError atomic.Pointer[error]
}

func newNodeHealth(poller *cri.StatusPoller, confDir string, binDirs []string) *nodeHealth {
	h := &nodeHealth{poller: poller, confDir: confDir, binDirs: binDirs}
	h.checkCNI()
	return h
}

func (h *nodeHealth) run(ctx context.Context) {
	t := time.NewTicker(cniCheckPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.checkCNI()
		}
	}
}

func (h *nodeHealth) checkCNI() {
	err := network.Check(h.confDir, h.binDirs)
	h.cniError.Store(&err)
}

// RuntimeErr is nil when the runtime says it is ready. Before the first
// poll completes the runtime counts as ready: Connect has just checked it.
func (h *nodeHealth) RuntimeErr() error {
	st, _ := h.poller.Health()
	if st.CheckedAt.IsZero() {
		return nil
	}
	return st.RuntimeErr()
}

// NetworkErr is nil when both the runtime and our CNI check find the pod
// network ready.
func (h *nodeHealth) NetworkErr() error {
	var errs []error
	if st, _ := h.poller.Health(); !st.CheckedAt.IsZero() {
		errs = append(errs, st.NetworkErr())
	}
	if e := h.cniError.Load(); e != nil {
		errs = append(errs, *e)
	}
	return errors.Join(errs...)
}

// notReady are why pods cannot run on the node: the runtime, the pod
// network, PLEG or the node shutting down, in the kubelet's words; none when the node is ready.
func (p *pods) notReady() []error {
	var problems []error
	if err := p.health.RuntimeErr(); err != nil {
		problems = append(problems, err)
	}
	if err := p.health.NetworkErr(); err != nil {
		problems = append(problems, err)
	}
	if ok, err := p.pleg.Healthy(); !ok {
		problems = append(problems, fmt.Errorf("PLEG is not healthy: %w", err))
	}
	if err := p.shutdown.ShuttingDown(); err != nil {
		problems = append(problems, err)
	}
	return problems
}

// conditions are the node conditions the core owns: Ready, from the runtime,
// the pod network and PLEG, with the kubelet's reasons.
func (p *pods) conditions() []*typesv1.NodeCondition {
	ready := &typesv1.NodeCondition{Type: "Ready", Status: "True", Reason: "KubeletReady", Message: "microlet is posting ready status"}
	if problems := p.notReady(); len(problems) > 0 {
		messages := make([]string, len(problems))
		for i, err := range problems {
			messages[i] = err.Error()
		}
		ready.Status, ready.Reason, ready.Message = "False", "KubeletNotReady", strings.Join(messages, "; ")
	}
	return []*typesv1.NodeCondition{ready}
}
