package podresources

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/microlet/microlet/internal/promreg"
)

// apiVersion is the server_api_version label of every request counted:
// only v1 is served.
const apiVersion = "v1"

// metrics are the kubelet's pod-resources endpoint counters, its names,
// help and label. The List and GetAllocatableResources error counters are
// registered as the kubelet registers them, though, as in the kubelet's
// v1 server, those calls never fail.
type metrics struct {
	total, list, getAllocatable, get, listErrors, getAllocatableErrors, getErrors *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: name, Help: help}, []string{"server_api_version"})
	}
	m := &metrics{
		total:                counter("pod_resources_endpoint_requests_total", "Cumulative number of requests to the PodResource endpoint. Broken down by server api version."),
		list:                 counter("pod_resources_endpoint_requests_list", "Number of requests to the PodResource List endpoint. Broken down by server api version."),
		getAllocatable:       counter("pod_resources_endpoint_requests_get_allocatable", "Number of requests to the PodResource GetAllocatableResources endpoint. Broken down by server api version."),
		get:                  counter("pod_resources_endpoint_requests_get", "Number of requests to the PodResource Get endpoint. Broken down by server api version."),
		listErrors:           counter("pod_resources_endpoint_errors_list", "Number of requests to the PodResource List endpoint which returned error. Broken down by server api version."),
		getAllocatableErrors: counter("pod_resources_endpoint_errors_get_allocatable", "Number of requests to the PodResource GetAllocatableResources endpoint which returned error. Broken down by server api version."),
		getErrors:            counter("pod_resources_endpoint_errors_get", "Number of requests to the PodResource Get endpoint which returned error. Broken down by server api version."),
	}
	if err := promreg.Register(reg, m.total, m.list, m.getAllocatable, m.get, m.listErrors, m.getAllocatableErrors, m.getErrors); err != nil {
		return nil, err
	}
	return m, nil
}

// request counts one request to an endpoint.
func (m *metrics) request(endpoint *prometheus.CounterVec) {
	m.total.WithLabelValues(apiVersion).Inc()
	endpoint.WithLabelValues(apiVersion).Inc()
}
