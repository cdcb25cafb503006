//go:build !linux

package sdk

func limitParallelism()     {}
func releaseStartupMemory() {}
