// Package sdk is what a microlet plugin imports. It hides go-plugin, gRPC,
// the handshake and logging: a plugin is a Go value with a Configure method
// plus the methods of its kind, handed to Serve from main.
//
//	type config struct {
//		Threshold sdk.Quantity `json:"threshold"`
//	}
//
//	type strategy struct{ cfg config }
//
//	func (s *strategy) Configure(_ context.Context, c *config, _ *sdk.Host) error { s.cfg = *c; return nil }
//	func (s *strategy) Synchronize(ctx context.Context, req *evictionv1.SynchronizeRequest) (*evictionv1.SynchronizeResponse, error) { ... }
//
//	func main() { sdk.Serve(sdk.Info{Kind: sdk.KindEviction, Name: "mine", Version: "0.1.0"}, &strategy{}) }
//
// The config block the operator writes in the agent's HCL is decoded into
// the plugin's config type as JSON would be: unknown keys are errors, a
// SetDefaults method (if any) runs first and a Validate method (if any) after.
package sdk
