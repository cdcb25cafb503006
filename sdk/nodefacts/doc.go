// Package nodefacts measures the node the way upstream's kubelet does, for
// the core and for plugins alike: a pod's QoS class, a filesystem's size and
// use, a cgroup's working set. Both sides import it and it imports neither,
// so one fact has one formula (plugins link only sdk/ and proto/: no
// k8s.io module here).
package nodefacts
