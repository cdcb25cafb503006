//go:build !linux

package sdk

import (
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
)

func limitParallelism()          {}
func nameProcess()               {}
func releaseMemory(hclog.Logger) {}

// releaseAfterCalls adds no interceptor where executables are not released.
func releaseAfterCalls() grpc.ServerOption { return grpc.EmptyServerOption{} }
