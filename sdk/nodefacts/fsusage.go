package nodefacts

// FsUsage is what statfs says of a filesystem, in bytes and inodes.
type FsUsage struct {
	Capacity, Available, Used      uint64
	Inodes, InodesFree, InodesUsed uint64
}
