//go:build !linux

package sdk

import "github.com/hashicorp/go-hclog"

func tuneRuntime()               {}
func nameProcess()               {}
func releaseMemory(hclog.Logger) {}
