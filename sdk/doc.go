// Package sdk is what a microlet plugin imports. It hides go-plugin, gRPC,
// the handshake and logging: a plugin is a Go value with a Configure method
// plus the methods of its kind, handed to Serve from main.
//
//	type config struct {
//		MemoryAvailable sdk.Quantity `json:"memory_available"`
//	}
//
//	type strategy struct{ threshold sdk.Quantity }
//
//	func (s *strategy) Configure(_ context.Context, c *config, _ *sdk.Host) error { s.threshold = c.MemoryAvailable; return nil }
//	func (s *strategy) Synchronize(ctx context.Context, req *evictionv1.SynchronizeRequest) (*evictionv1.SynchronizeResponse, error) { ... }
//
//	func main() { sdk.Serve(sdk.Info{Kind: sdk.KindEviction, Name: "mine", Version: "0.1.0"}, &strategy{}) }
//
// The config block the operator writes in the agent's HCL is decoded into
// the plugin's config type by its json tags: a SetDefaults method (if any)
// runs first, keys must match exactly (unknown keys are errors), every
// problem is reported with its key path ("hard.memory_available"), and a
// Validate method (if any) runs last. sdk.Quantity and sdk.Duration read
// Kubernetes quantities ("100Mi") and durations ("30s").
//
// Errors carry gRPC codes the core acts on: Retryable, Invalid,
// Unsupported, and ConfigErrors for a bad config block. Log writes to the
// core's log. Package sdktest runs a plugin in tests as the core does.
// README.md in this directory is the plugin author's guide.
package sdk
