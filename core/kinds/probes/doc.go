// Package probes is the core's side of liveness, readiness and startup
// probes, upstream's pkg/kubelet/prober manager and results cache with the
// probing itself moved into the probes plugin.
//
// UpdatePod, called with each pod and its runtime status, works out which
// running container instances have which probes (the pod's containers and
// its sidecars) and keeps the plugin's set in step: SetContainerProbes and
// RemoveContainerProbes as containers come and go, SyncProbes of the whole
// set whenever a plugin process starts serving. Run keeps that session
// with the plugin: it holds a lease on the serving process, reads its
// WatchResults stream, and moves to the next process when the lease ends
// (a swap or a restart).
//
// The results cache keeps, per container instance, the verdict of each of
// its probes, starting from upstream's initial values (readiness failed,
// liveness succeeded, startup unknown). It answers the runtime manager
// (ShouldRestart, Started: podruntime.ProbeResults) and pod status (Ready),
// and sends an Update on Updates whenever the plugin changes a verdict.
//
// Fallback: while the plugin is down or being swapped, every verdict stays
// as it was, so no container turns unready or is restarted for want of a
// result; a new process gets the whole set and its verdicts replace the
// kept ones as they settle. Without a probes plugin configured, containers
// are treated as having no probes: ready once running, never restarted by
// a probe. docs/probes.md has the details.
package probes
