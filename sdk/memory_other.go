//go:build !linux

package sdk

import (
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
)

func limitParallelism()                      {}
func nameProcess()                           {}
func releaseMemory(hclog.Logger)             {}
func releaseAfterCalls() []grpc.ServerOption { return nil }
