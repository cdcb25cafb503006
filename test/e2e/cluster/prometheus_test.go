//go:build e2e

package clustere2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/prereq"
	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// metricFamily is one row of testdata/kubelet-metric-families.tsv.
type metricFamily struct {
	path, name, kind string
	labels, queried  []string
	// absent says why the family may have no series; "" if it must.
	absent string
	// gap says why microlet does not export the family yet.
	gap string
}

func readMetricFamilies(t *testing.T) []metricFamily {
	t.Helper()
	f, err := os.Open("testdata/kubelet-metric-families.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	var out []metricFamily
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 6 {
			t.Fatalf("kubelet-metric-families.tsv: %d columns in %q, want 6", len(cols), line)
		}
		f := metricFamily{path: cols[0], name: cols[1], kind: cols[2], labels: split(cols[3]), queried: split(cols[4])}
		if gap, ok := strings.CutPrefix(cols[5], "gap: "); ok {
			f.gap = gap
		} else {
			f.absent = cols[5]
		}
		out = append(out, f)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPrometheusScrape scrapes the node's /metrics, /metrics/cadvisor,
// /metrics/probes and /metrics/resource as kube-prometheus's kubelet job
// does (HTTPS, a service account's bearer token, the node API reviewing
// it) while a pod with a cpu limit, a volume and a readiness probe runs.
// Every family the kubelet dashboards and scrape jobs query
// (testdata/kubelet-metric-families.tsv) is there with upstream's type and
// labels, unless the list says why it may be absent; cAdvisor's counters
// say what the pod's containers do (cadvisorSanity); and `promtool check
// metrics` (built from the Prometheus module) finds nothing in any scrape
// that it does not find in an upstream kubelet's.
func TestPrometheusScrape(t *testing.T) {
	t.Parallel()
	c := cluster(t)
	promtool := clusterTool(t, "promtool")
	families := readMetricFamilies(t)
	// With the probes plugin: /metrics/probes counts its results.
	n := startNode(t, nodeOptions{Plugins: append(pressuree2e.DefaultPlugins(), pressuree2e.Plugin{Kind: "probes", Name: "default"})})
	waitReady(t, n, "")

	ns := testNamespace(t)
	spec := apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage,
		Command:        []string{"sh", "-c", "echo ok > /data/ready; " + untilTerm},
		Resources:      v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m")}},
		VolumeMounts:   []v1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "marks", MountPath: "/marks"}},
		ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/data/ready"}}}, PeriodSeconds: 1},
	}, v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.Volume{Name: "marks", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	// What cadvisorSanity looks for: a container spinning under a small cpu
	// limit, and one sending to the pod's gateway every second.
	spec.Containers = append(spec.Containers,
		v1.Container{Name: "busy", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", "while :; do :; done"},
			Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("20m")}}},
		v1.Container{Name: "net", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c",
			`gw=$(ip route | awk '/^default/ {print $3}'); while :; do ping -c 1 -W 1 "$gw" || wget -q -T 1 -O /dev/null "http://$gw:1/"; sleep 1; done`}})
	ctx := context.Background()
	if _, err := c.Admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "scraped"}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, n, ns, "scraped", "Ready", func(p *v1.Pod) bool {
		return slices.ContainsFunc(p.Status.Conditions, func(c v1.PodCondition) bool {
			return c.Type == v1.PodReady && c.Status == v1.ConditionTrue
		})
	})

	// Prometheus's account: kube-prometheus grants nodes/metrics get.
	account := n.Name + "-prometheus"
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	token, err := c.ServiceAccountToken(tctx, "default", account)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.GrantNodeAccess(tctx, account, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: account},
		[]string{"get"}, "metrics"); err != nil {
		t.Fatal(err)
	}

	scrapes := map[string]map[string]*dto.MetricFamily{}
	bodies := map[string]string{}
	var missing string
	n.Eventually("every listed family in the scrapes", func() (bool, string) {
		for _, path := range []string{"/metrics", "/metrics/cadvisor", "/metrics/probes", "/metrics/resource"} {
			code, body := n.Get(t, path, token)
			if code != http.StatusOK {
				t.Fatalf("GET %s with a service account's token: %d %s", path, code, body)
			}
			parser := expfmt.NewTextParser(model.UTF8Validation)
			parsed, err := parser.TextToMetricFamilies(strings.NewReader(body))
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			scrapes[path], bodies[path] = parsed, body
		}
		missing = ""
		for _, f := range families {
			if f.absent == "" && f.gap == "" && len(scrapes[f.path][f.name].GetMetric()) == 0 {
				missing += " " + f.path + " " + f.name
			}
		}
		// Some come with time: a second relist interval, a probe result,
		// throttled periods, packets.
		insane := cadvisorSanity(scrapes["/metrics/cadvisor"])
		return missing == "" && insane == "", "missing:" + missing + "; /metrics/cadvisor: " + insane
	})

	for _, f := range families {
		checkFamily(t, f, scrapes[f.path][f.name])
	}
	// promtool's lint reports some of the kubelet's own names (counters
	// named *_count, without _total): what it says of microlet's scrapes
	// may only be what it says of an upstream kubelet's.
	ours := map[string][]string{}
	for path, body := range bodies {
		ours[path] = promtoolFindings(t, promtool, path, body)
	}
	// The kubelet's cAdvisor exports some families only after its first
	// housekeeping (the filesystems' inodes): its scrapes are compared once
	// they hold every family a finding on ours names.
	kubelet := kubeletScrapes(t, slices.Sorted(maps.Keys(bodies)), func(theirs map[string]string) string {
		for path, findings := range ours {
			for _, f := range findings {
				if name, _, _ := strings.Cut(f, " "); !strings.Contains(theirs[path], "\n# TYPE "+name+" ") {
					return "the kubelet's " + path + " has no " + name + " yet"
				}
			}
		}
		return ""
	})
	// A cAdvisor family the list lets microlet lack here, the kubelet
	// must lack on the same machine too.
	parser := expfmt.NewTextParser(model.UTF8Validation)
	theirCadvisor, err := parser.TextToMetricFamilies(strings.NewReader(kubelet["/metrics/cadvisor"]))
	if err != nil {
		t.Fatalf("the kubelet's /metrics/cadvisor: %v", err)
	}
	for _, f := range families {
		if f.path == "/metrics/cadvisor" && f.absent != "" && len(scrapes[f.path][f.name].GetMetric()) == 0 &&
			len(theirCadvisor[f.name].GetMetric()) > 0 {
			t.Errorf("/metrics/cadvisor %s: none here (%s), but the kubelet on this machine has %d series", f.name, f.absent, len(theirCadvisor[f.name].GetMetric()))
		}
	}
	for _, path := range slices.Sorted(maps.Keys(bodies)) {
		theirs := promtoolFindings(t, promtool, "the kubelet's "+path, kubelet[path])
		for _, f := range ours[path] {
			if !slices.Contains(theirs, f) {
				t.Errorf("promtool check metrics on %s: %s (not said of the kubelet's)", path, f)
			}
		}
	}
}

// cadvisorSanity says what a /metrics/cadvisor scrape shows of the
// "scraped" pod that does not match what its containers do, "" if nothing:
// "busy" spins under a 20m cpu limit, so CFS throttles it; "net" has no
// cpu limit, so it has no CFS series (cAdvisor's: only with a quota), and
// sends to the pod's gateway, so the pod's eth0 counts packets both ways
// (ARP at least); "app" wrote a file, which the page cache holds. The
// node's disk has been read from, and /proc/diskstats counts it.
func cadvisorSanity(families map[string]*dto.MetricFamily) string {
	// value sums the series of family whose labels include match; false
	// when there is none.
	value := func(family string, match map[string]string) (float64, bool) {
		sum, found := 0.0, false
	series:
		for _, m := range families[family].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if labels[k] != v {
					continue series
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			found = true
		}
		return sum, found
	}
	busy := map[string]string{"pod": "scraped", "container": "busy"}
	eth0 := map[string]string{"pod": "scraped", "container": "", "interface": "eth0"}
	var bad []string
	throttled, _ := value("container_cpu_cfs_throttled_periods_total", busy)
	periods, _ := value("container_cpu_cfs_periods_total", busy)
	if throttled == 0 || periods < throttled {
		bad = append(bad, fmt.Sprintf("busy: %v CFS periods, %v throttled; want some throttled, no more than elapsed", periods, throttled))
	}
	if _, ok := value("container_cpu_cfs_periods_total", map[string]string{"pod": "scraped", "container": "net"}); ok {
		bad = append(bad, "net, without a cpu limit, has CFS periods")
	}
	for _, family := range []string{"container_network_receive_packets_total", "container_network_transmit_packets_total"} {
		if v, _ := value(family, eth0); v == 0 {
			bad = append(bad, "the pod's eth0 has no "+family)
		}
	}
	if v, _ := value("container_memory_cache", map[string]string{"pod": "scraped", "container": "app"}); v == 0 {
		bad = append(bad, "app has no page cache")
	}
	if v, _ := value("container_fs_reads_total", map[string]string{"id": "/"}); v == 0 {
		bad = append(bad, "the node has no filesystem reads")
	}
	return strings.Join(bad, "; ")
}

// promtoolFindings runs `promtool check metrics` on a scrape and returns
// its lint findings; a scrape it cannot parse fails the test.
func promtoolFindings(t *testing.T, promtool, what, body string) []string {
	t.Helper()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit) && exit.ExitCode() == promtoolLintExit:
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	t.Errorf("promtool check metrics on %s: %v\n%s", what, err, out)
	return nil
}

// promtoolLintExit is promtool's exit status for lint findings alone (its
// lintErrExitCode); parse errors exit 1.
const promtoolLintExit = 3

// kubeletScrapes runs an upstream kubelet v1.34.4 standalone on a devnode
// of its own (its server lets anyone in) and scrapes paths from it, again
// every 2 s until lacking says nothing lacks (""), for at most a minute.
func kubeletScrapes(t *testing.T, paths []string, lacking func(map[string]string) string) map[string]string {
	t.Helper()
	dev := devnode.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), kubeletWait)
	defer cancel()
	k, err := devnode.StartKubelet(ctx, dev, devnode.KubeletOptions{})
	if errors.Is(err, devnode.ErrNoKubelet) {
		prereq.Missing(t, "%v", err)
	}
	if err != nil {
		t.Fatalf("StartKubelet: %v", err)
	}
	defer func() {
		if err := k.Close(); err != nil {
			t.Errorf("kubelet: %v", err)
		}
	}()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(time.Minute)
	for {
		out := map[string]string{}
		for _, path := range paths {
			resp, err := client.Get("https://" + k.ServerAddress + path)
			if err != nil {
				t.Fatalf("the kubelet's %s: %v", path, err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("the kubelet's %s: %s %v", path, resp.Status, err)
			}
			out[path] = string(body)
		}
		missing := lacking(out)
		if missing == "" {
			return out
		}
		if time.Now().After(deadline) {
			t.Errorf("after a minute %s; comparing with what it has", missing)
			return out
		}
		time.Sleep(2 * time.Second)
	}
}

// checkFamily compares one scraped family with its row.
func checkFamily(t *testing.T, want metricFamily, got *dto.MetricFamily) {
	t.Helper()
	what := want.path + " " + want.name
	if want.gap != "" {
		if got != nil {
			t.Errorf("%s is exported now; its gap in testdata/kubelet-metric-families.tsv (%s) is out of date", what, want.gap)
		} else {
			t.Logf("%s: a known gap: %s", what, want.gap)
		}
		return
	}
	if got == nil {
		if want.absent == "" {
			t.Errorf("%s: no such family", what)
		}
		return
	}
	if kind := strings.ToLower(got.GetType().String()); kind != want.kind {
		t.Errorf("%s: type %s, upstream's is %s", what, kind, want.kind)
	}
	wantLabels := slices.Sorted(slices.Values(want.labels))
	for _, m := range got.GetMetric() {
		var names []string
		for _, l := range m.GetLabel() {
			names = append(names, l.GetName())
		}
		slices.Sort(names)
		if !slices.Equal(names, wantLabels) {
			t.Errorf("%s: a series has labels %v, upstream's are %v", what, names, wantLabels)
			return
		}
	}
	for _, q := range want.queried {
		if !slices.Contains(want.labels, q) {
			t.Errorf("%s: the list queries label %s that it does not list", what, q)
		}
	}
}
