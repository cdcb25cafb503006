//go:build !linux

package sdk

func limitParallelism()     {}
func nameProcess()          {}
func releaseStartupMemory() {}
