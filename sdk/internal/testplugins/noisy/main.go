// Command noisy is a test plugin that prints to standard output before the
// go-plugin handshake, in init and in main, as careless plugin code or a
// chatty dependency does, and again in Configure, after it. The SDK's tests
// launch it to show that the handshake stays clean.
package main

import (
	"context"
	"fmt"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	"github.com/microlet/microlet/sdk"
)

func init() { fmt.Println("noisy: printed in init") }

type config struct{}

type noisy struct{}

func (noisy) Configure(context.Context, *config, *sdk.Host) error {
	fmt.Println("noisy: printed in Configure")
	return nil
}

func (noisy) Synchronize(context.Context, *evictionv1.SynchronizeRequest) (*evictionv1.SynchronizeResponse, error) {
	return &evictionv1.SynchronizeResponse{State: []byte("served")}, nil
}

func main() {
	fmt.Println("noisy: printed in main")
	sdk.Serve(sdk.Info{Kind: sdk.KindEviction, Name: "noisy", Version: "0.0.1"}, noisy{})
}
