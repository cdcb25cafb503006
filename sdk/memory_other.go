//go:build !linux

package sdk

import "github.com/hashicorp/go-hclog"

func limitParallelism()          {}
func nameProcess()               {}
func releaseMemory(hclog.Logger) {}
