package nodefacts

import (
	"testing"

	"golang.org/x/sys/unix"
)

// Upstream's two formulas disagree where the fragment is not the block:
// cAdvisor (node capacity, eviction, summary) counts blocks in f_frsize,
// as statfs(2) defines them; pkg/volume/util/fs uses f_bsize. This
// package follows cAdvisor.
func TestFsUsageOf(t *testing.T) {
	tests := []struct {
		name string
		st   unix.Statfs_t
		want FsUsage
	}{
		{"block and fragment alike (ext4, xfs, tmpfs)",
			unix.Statfs_t{Bsize: 4096, Frsize: 4096, Blocks: 100, Bfree: 30, Bavail: 20, Files: 50, Ffree: 10},
			FsUsage{Capacity: 409600, Available: 81920, Used: 286720, Inodes: 50, InodesFree: 10, InodesUsed: 40}},
		{"blocks counted in fragments, not in f_bsize",
			unix.Statfs_t{Bsize: 131072, Frsize: 4096, Blocks: 100, Bfree: 30, Bavail: 20, Files: 50, Ffree: 10},
			FsUsage{Capacity: 409600, Available: 81920, Used: 286720, Inodes: 50, InodesFree: 10, InodesUsed: 40}},
		{"more free than blocks (a racing filesystem) uses none",
			unix.Statfs_t{Bsize: 4096, Frsize: 4096, Blocks: 10, Bfree: 11, Bavail: 11, Files: 5, Ffree: 6},
			FsUsage{Capacity: 40960, Available: 45056, Used: 0, Inodes: 5, InodesFree: 6, InodesUsed: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FsUsageOf(&tt.st); got != tt.want {
				t.Errorf("FsUsageOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestStatfsMeasuresAPath(t *testing.T) {
	got, err := Statfs(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got.Capacity == 0 || got.Available > got.Capacity || got.Used > got.Capacity {
		t.Errorf("Statfs = %+v: want a capacity that holds what is available and used", got)
	}
	if _, err := Statfs("/no/such/dir"); err == nil {
		t.Error("Statfs of a missing path succeeded")
	}
}
