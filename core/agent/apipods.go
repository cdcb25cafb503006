package agent

import (
	"context"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/cluster/admission"
	"github.com/microlet/microlet/core/cluster/apisource"
	"github.com/microlet/microlet/core/cluster/mirrorpods"
	"github.com/microlet/microlet/core/cluster/podstatus"
	"github.com/microlet/microlet/core/cluster/services"
	"github.com/microlet/microlet/core/cluster/thisnode"
	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/pods/podruntime"
)

// apiPods is the pod side of a node in a cluster: the API server's pod
// source, the Node the predicates read, and what writes back (pod
// statuses, mirror pods).
type apiPods struct {
	cluster  *cluster
	log      hclog.Logger
	source   *apisource.Source
	node     *thisnode.Informer
	admitter *admission.Admitter
	// services are the cluster's Services, for containers' service
	// variables.
	services *services.Informer
	// taints are register_with_taints, parsed once for the predicates and
	// the node's registration.
	taints []v1.Taint
}

// newAPIPods makes the API server's pod source, the Node informer (which
// node status reads too) and the predicates; nil on a standalone node. The
// writers need the sync loop: see start.
func (a *Agent) newAPIPods(c *cluster) (*apiPods, error) {
	if c == nil {
		return nil, nil
	}
	cfg := a.cfg
	var taints []v1.Taint
	for _, s := range cfg.RegisterWithTaints {
		t, err := config.ParseTaint(s)
		if err != nil {
			return nil, err
		}
		taints = append(taints, t)
	}
	node := thisnode.New(c.client, cfg.NodeName, c.outages.Part("watching the node's Node"))
	return &apiPods{
		cluster:  c,
		log:      a.log,
		source:   apisource.New(c.client, cfg.NodeName, node.HasSynced, c.outages.Part("watching the node's pods"), a.log),
		node:     node,
		admitter: &admission.Admitter{Node: node.Get, Initial: admission.InitialNode(cfg.NodeName, cfg.NodeLabels, taints)},
		services: services.New(c.client, c.outages.Part("watching the cluster's services")),
		taints:   taints,
	}, nil
}

// start runs the Node informer, the status syncer and the mirror pods
// once the pod machinery p exists; the source runs within p's podconfig,
// waiting for the Node informer.
func (ap *apiPods) start(ctx context.Context, p *pods) {
	c := ap.cluster
	statuses := podstatus.New(podstatus.Options{
		Client:                     c.client,
		Pods:                       ap.source.Pods(),
		HasSynced:                  ap.source.HasSynced,
		Statuses:                   p.statuses,
		CouldHaveRunningContainers: p.loop.CouldHaveRunningContainers,
		Outage:                     c.outages.Part("writing pod statuses"),
		Logger:                     ap.log,
	})
	mirrors := mirrorpods.New(mirrorpods.Options{
		Client:    c.client,
		Pods:      ap.source.Pods(),
		HasSynced: ap.source.HasSynced,
		Node:      ap.node.Get,
		Desired:   p.loop.DesiredPods,
		Active:    p.loop.ActivePods,
		Outage:    c.outages.Part("updating mirror pods"),
		Logger:    ap.log,
	})
	go ap.node.Run(ctx)
	go ap.services.Run(ctx)
	go statuses.Run(ctx)
	go mirrors.Run(ctx)
}

// serviceLister is the Services for the runtime manager; nil on a
// standalone node.
func (ap *apiPods) serviceLister() podruntime.ServiceLister {
	if ap == nil {
		return nil
	}
	return ap.services
}
