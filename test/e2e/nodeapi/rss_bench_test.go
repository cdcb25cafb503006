//go:build e2e

package nodeapie2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// rssSettle is how long the core idles before its RSS is read: start-up
// garbage is collected, steady-state buffers are in place.
const rssSettle = 20 * time.Second

// BenchmarkCoreRSS reports the core's resident set on its default config
// (node API included, as a node runs it), idle and with a few pods. Run it
// with E2E_BIN_DIR naming the build to measure: the config it writes holds
// no node API keys, so older builds run it too.
//
//	E2E_BIN_DIR=$PWD/_output/bin go test -tags e2e -run '^$' -bench CoreRSS -benchtime 1x ./test/e2e/nodeapi/
func BenchmarkCoreRSS(b *testing.B) {
	for range b.N {
		n := pressuree2e.Start(b, pressuree2e.Options{})
		time.Sleep(rssSettle)
		idle := rss(b, n.CorePID())
		const pods = 5
		for i := range pods {
			n.Push(pressuree2e.PodSpec{Name: fmt.Sprintf("idle-%d", i), Script: pressuree2e.WaitForTermination}.Manifest())
		}
		n.Eventually(fmt.Sprintf("%d containers run", pods), func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp, err := n.CRI.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
				State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}})
			if err != nil {
				return false, err.Error()
			}
			return len(resp.Containers) == pods, fmt.Sprintf("%d running", len(resp.Containers))
		})
		time.Sleep(rssSettle)
		b.ReportMetric(idle, "idle-RSS-MiB")
		b.ReportMetric(rss(b, n.CorePID()), "5pods-RSS-MiB")
	}
}

// rss is a process's resident set in MiB.
func rss(b *testing.B, pid int) float64 {
	b.Helper()
	p, err := procfs.NewProc(pid)
	if err != nil {
		b.Fatal(err)
	}
	st, err := p.Stat()
	if err != nil {
		b.Fatal(err)
	}
	return float64(st.ResidentMemory()) / (1 << 20)
}
