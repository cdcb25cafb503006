package collect

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

const mountinfo = `22 1 254:0 / / rw,relatime - ext4 /dev/vda rw
23 22 254:0 /var/lib/x /var/lib/x rw,relatime - ext4 /dev/vda rw
24 22 0:21 / /tmp rw - tmpfs tmpfs rw
25 22 8:1 / /data rw - xfs /dev/sda1 rw
26 22 0:50 / /run/containerd/x/rootfs rw - overlay overlay rw
27 22 8:2 / /mnt rw - vfat /dev/sda2 rw
28 22 9:9 / /gone rw - ext4 /dev/md9 rw
`

const diskstats = `   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
 254       0 vda 3695772 122363 423784554 7094940 5932720 3403965 500926648 8888213 0 1485348 16955089 2348364 318 674230064 525306 975169 446629
   8       1 sda1 10 0 80 1 20 0 160 2 0 3 3 0 0 0 0
   8       2 sda2 1 0 8 1 2 0 16 2 0 3 3 0 0 0 0
`

func TestFilesystemIO(t *testing.T) {
	root := procTree(t)
	writeTree(t, root, map[string]string{"self/mountinfo": mountinfo, "diskstats": diskstats})
	p, _ := OpenProc(root)
	got, err := p.FilesystemIO()
	if err != nil {
		t.Fatal(err)
	}
	// vda once (the bind mount is the same device), sda1's xfs; not tmpfs,
	// overlay, vfat, nor a device diskstats does not list.
	want := []*typesv1.DeviceIOStats{
		{Device: "/dev/vda", Major: 254, Minor: 0, Reads: u(3695772), Writes: u(5932720)},
		{Device: "/dev/sda1", Major: 8, Minor: 1, Reads: u(10), Writes: u(20)},
	}
	if len(got) != len(want) {
		t.Fatalf("FilesystemIO = %v, want %v", got, want)
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("FilesystemIO[%d] = %v, want %v", i, got[i], want[i])
		}
	}

	writeTree(t, root, map[string]string{"diskstats": "254 0 vda x\n"})
	if _, err := p.FilesystemIO(); err == nil || !strings.Contains(err.Error(), `diskstats: expected`) {
		t.Errorf("a malformed diskstats: %v, want an error naming it", err)
	}
}
