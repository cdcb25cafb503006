// Package cri is the core's client of the Container Runtime Interface (CRI
// v1, k8s.io/cri-api): the RuntimeService and ImageService over unix
// sockets.
//
// It is not k8s.io/cri-client, the kubelet's client, because that module
// pulls k8s.io/component-base (klog, OpenTelemetry, the component metrics
// registry) into whatever imports it, and the core is meant to stay small.
// What the core needs from a client is here: a version check with a bounded
// wait for the runtime at start, a deadline on every call, clear errors
// that name the call and the object, fast failure while the runtime is down
// with recovery within about a second of its return, a poller of the
// runtime's conditions, and detection of container events support.
//
// The methods are thin: each wraps one RPC with its deadline and error
// wrapping and nothing else. Errors keep their gRPC status, so
// status.Code(err) tells NotFound and Unavailable apart.
package cri
