//go:build !linux

package nodefacts

import "errors"

// Statfs is measured on Linux only; elsewhere plugins build but cannot
// measure a filesystem.
func Statfs(string) (FsUsage, error) { return FsUsage{}, errors.ErrUnsupported }
