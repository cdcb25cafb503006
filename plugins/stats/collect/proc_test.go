package collect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

const netDev = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
  eth0:    5000      50    1    3    0     0          0         0     6000      60    2    4    0     0       0          0
  ens3:    7000      70    0    0    0     0          0         0     8000      80    0    0    0     0       0          0
vethab12:    9       1    0    0    0     0          0         0        9       1    0    0    0     0       0          0
`

const netRoute = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
	"eth0\t00000000\t0102A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n" +
	"ens3\t00000000\t0102A8C0\t0003\t0\t0\t50\t00000000\t0\t0\t0\n" +
	"eth0\t0002A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"

// procTree is a fake procfs with what the node stats read.
func procTree(t *testing.T) string {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"meminfo": "MemTotal:       16384 kB\nMemFree:         4096 kB\nSwapTotal:       1024 kB\nSwapFree:         512 kB\n",
		// USER_HZ is 100: user 2s, nice 1s, system 3s, idle 100s, iowait
		// 5s, irq 0.5s, softirq 0.5s, steal 1s.
		"stat":                   "cpu  200 100 300 10000 500 50 50 100 0 0\ncpu0 200 100 300 10000 500 50 50 100 0 0\nbtime 1700000000\n",
		"loadavg":                "0.25 2.12 4.81 2/3518 17332\n",
		"sys/kernel/pid_max":     "4194304\n",
		"sys/kernel/threads-max": "192730\n",
		"net/dev":                netDev,
		"net/route":              netRoute,
		"pressure/cpu":           "some avg10=5.66 avg60=3.83 avg300=23.10 total=1405097397\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
	})
	return root
}

func TestProc(t *testing.T) {
	p, err := OpenProc(procTree(t))
	if err != nil {
		t.Fatal(err)
	}
	mem, err := p.Meminfo()
	if err != nil || *mem.MemTotalBytes != 16384*1024 || *mem.SwapFreeBytes != 512*1024 {
		t.Errorf("Meminfo = %+v, %v", mem, err)
	}
	if boot, err := p.BootTime(); err != nil || !boot.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("BootTime = %v, %v", boot, err)
	}
	if usage, err := p.CPUUsageNanos(); err != nil || usage != 8*uint64(time.Second) {
		t.Errorf("CPUUsageNanos = %d, %v; want 8s (user+nice+system+irq+softirq+steal)", usage, err)
	}

	r := p.Rlimit()
	if r.MaxPID == nil || *r.MaxPID != 192730 || r.Tasks == nil || *r.Tasks != 3518 || r.Time.IsZero() {
		t.Errorf("Rlimit = %+v, want maxpid 192730 (threads-max < pid_max), 3518 tasks", r)
	}

	psi, err := p.Pressure("cpu")
	want := &typesv1.PSIStats{Some: &typesv1.PSIData{Avg10: 5.66, Avg60: 3.83, Avg300: 23.10, Total: 1405097397}, Full: &typesv1.PSIData{}}
	if err != nil || !proto.Equal(psi, want) {
		t.Errorf("Pressure(cpu) = %v, %v", psi, err)
	}
	if psi, err := p.Pressure("io"); psi != nil || err != nil {
		t.Errorf("Pressure(io) without the file = %v, %v; want none", psi, err)
	}

	net, err := p.Network()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range net.Interfaces {
		names = append(names, i.GetName())
	}
	if strings.Join(names, ",") != "ens3,eth0" || net.Default != "ens3" {
		t.Errorf("Network: interfaces %v (default %q), want ens3,eth0 without lo and veth, default ens3 (lowest metric)", names, net.Default)
	}
	if eth0 := net.Interfaces[1]; eth0.GetRxBytes() != 5000 || eth0.GetRxErrors() != 1 || eth0.GetTxBytes() != 6000 || eth0.GetTxErrors() != 2 ||
		eth0.GetRxPackets() != 50 || eth0.GetRxDropped() != 3 || eth0.GetTxPackets() != 60 || eth0.GetTxDropped() != 4 {
		t.Errorf("eth0 = %v", eth0)
	}
}

func TestProcMissingFiles(t *testing.T) {
	root := procTree(t)
	for _, f := range []string{"loadavg", "sys/kernel/threads-max", "net/route"} {
		if err := os.Remove(filepath.Join(root, f)); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := OpenProc(root)
	r := p.Rlimit()
	if r.MaxPID == nil || *r.MaxPID != 4194304 || r.Tasks != nil {
		t.Errorf("Rlimit without threads-max and loadavg = %+v, want pid_max alone and no task count", r)
	}
	net, err := p.Network()
	if err != nil || net.Default != "" || len(net.Interfaces) != 2 {
		t.Errorf("Network without a route table = %+v, %v; want the interfaces and no default", net, err)
	}
	if _, err := OpenProc(filepath.Join(root, "missing")); err == nil {
		t.Error("OpenProc of a missing directory succeeded")
	}
}

func TestProcLoadavgMalformed(t *testing.T) {
	root := procTree(t)
	writeTree(t, root, map[string]string{"loadavg": "0.25 2.12 4.81 3518 17332\n"})
	p, _ := OpenProc(root)
	if _, err := p.tasks(); err == nil || !strings.Contains(err.Error(), "running/total tasks in the fourth field") {
		t.Errorf("tasks: %v, want an error naming the field", err)
	}
}

func TestProcessNetwork(t *testing.T) {
	root := procTree(t)
	writeTree(t, root, map[string]string{"42/net/dev": netDev})
	p, _ := OpenProc(root)
	net, err := p.ProcessNetwork(42)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range net.Interfaces {
		names = append(names, i.GetName())
	}
	if strings.Join(names, ",") != "ens3,eth0" || net.Default != "eth0" {
		t.Errorf("ProcessNetwork: interfaces %v (default %q), want ens3,eth0 with eth0 the pod's default", names, net.Default)
	}
	if _, err := p.ProcessNetwork(43); err == nil {
		t.Error("ProcessNetwork of a missing process succeeded")
	}
}
