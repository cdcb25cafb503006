package devcluster

import (
	"context"
	"errors"
	"slices"

	"k8s.io/client-go/rest"
)

// StopAPIServer stops kube-apiserver by its PID (SIGTERM, as an operator
// or a crash-looping static pod would) and leaves etcd, the controllers
// and every file in place: an outage of the API server alone, for tests
// of what nodes do meanwhile. StartAPIServer ends it.
func (c *Cluster) StopAPIServer() error {
	if c.api == nil {
		return errors.New("devcluster: no API server")
	}
	return c.api.stop()
}

// StartAPIServer starts kube-apiserver again as it ran before, with the
// same etcd, certificates, flags and port (clients reconnect to the same
// URL), and waits until it is ready. Its log continues the old one.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	old := c.api
	if old == nil {
		return errors.New("devcluster: no API server")
	}
	select {
	case <-old.exited:
	default:
		return errors.New("devcluster: the API server still runs; StopAPIServer first")
	}
	api, err := startDaemon(old.logPath, old.cmd.Path, old.cmd.Args[1:]...)
	if err != nil {
		return err
	}
	// Close stops the new one in the old one's place.
	c.daemons[slices.Index(c.daemons, old)] = api
	c.api = api
	adminHTTP, err := rest.HTTPClientFor(c.adminConfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return api.waitFor(ctx, "kube-apiserver", c.URL+"/readyz", adminHTTP)
}
