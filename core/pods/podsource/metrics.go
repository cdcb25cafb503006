package podsource

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// manifestErrorsName counts manifests a source could not use.
const manifestErrorsName = "microlet_static_pod_manifest_errors_total"

// registerManifestErrors registers the manifest error counter on reg, or
// returns the one another source registered there.
func registerManifestErrors(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	counter := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: manifestErrorsName,
		Help: "Static pod manifests that could not be used (unreadable, undecodable or invalid), " +
			"by source (file, http) and manifest (file path, URL), counted once per distinct broken content.",
	}, []string{"source", "manifest"})
	if err := reg.Register(counter); err != nil {
		var registered prometheus.AlreadyRegisteredError
		if errors.As(err, &registered) {
			if existing, ok := registered.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing, nil
			}
		}
		return nil, fmt.Errorf("registering %s: %w", manifestErrorsName, err)
	}
	return counter, nil
}
