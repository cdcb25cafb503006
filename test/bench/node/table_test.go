//go:build e2e

package nodebench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// The budgets of issue 18 ("Stay at the floor at 100 pods, shrink the
// agent's memory"), which tightened those of "Run pods on a real container
// runtime": microlet's start within 1.1x the floor's and no slower than
// the kubelet's, its stop no slower than the kubelet's, and, core and
// every plugin summed, its PSS at most 0.7x and its idle CPU under the
// kubelet's. 0 is no budget.
const (
	startFloorBudget   = 1.10
	startKubeletBudget = 1.00
	stopKubeletBudget  = 1.00
	pssBudget          = 0.70
	idleCPUBudget      = 1.00
)

// printTable writes the results side by side, with microlet's ratios and
// whether each budget holds, then the samples behind them. A baseline, if
// one ran, gets a column and its ratio next to microlet's.
func printTable(out io.Writer, all map[string]*figures) {
	floor, kubelet, micro, baseline := all["floor"], all["kubelet"], all["microlet"], all["baseline"]
	agents := []*figures{kubelet, micro}
	if baseline != nil {
		agents = append(agents, baseline)
	}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\npod start and stop, median of %d (s)\tfloor\t%s\tmicrolet/floor\tmicrolet/kubelet\tbudget\t%s\n", runs, names(agents), baselineCell(baseline, "baseline/floor\tbaseline/kubelet\t"))
	for _, row := range []struct {
		what                 string
		median               func(*figures, int) time.Duration
		floorMax, kubeletMax float64
	}{
		{"start", (*figures).start, startFloorBudget, startKubeletBudget},
		{"stop", (*figures).stop, 0, stopKubeletBudget},
	} {
		for _, size := range batchSizes {
			cells := []string{fmt.Sprintf("%.2f", row.median(floor, size).Seconds())}
			for _, f := range agents {
				cells = append(cells, fmt.Sprintf("%.2f", row.median(f, size).Seconds()))
			}
			xf := ratio(row.median(micro, size), row.median(floor, size))
			xk := ratio(row.median(micro, size), row.median(kubelet, size))
			cells = append(cells, fmt.Sprintf("%.2fx", xf), fmt.Sprintf("%.2fx", xk), budgets(
				budget{"floor", xf, row.floorMax}, budget{"kubelet", xk, row.kubeletMax}))
			if baseline != nil {
				cells = append(cells, fmt.Sprintf("%.2fx", ratio(row.median(baseline, size), row.median(floor, size))),
					fmt.Sprintf("%.2fx", ratio(row.median(baseline, size), row.median(kubelet, size))))
			}
			fmt.Fprintf(w, "%s, %d pods\t%s\t\n", row.what, size, strings.Join(cells, "\t"))
		}
	}
	fmt.Fprintf(w, "\nat %d pods (microlet: core + plugins)\t\t%s\tmicrolet/kubelet\tbudget\t%s\n", usagePods, names(agents), baselineCell(baseline, "baseline/kubelet\t"))
	for _, row := range []struct {
		what  string
		value func(*figures) float64
		max   float64
	}{
		{"RSS (MB)", func(f *figures) float64 { return float64(f.memory.rssKB) / 1024 }, 0},
		{"PSS (MB)", func(f *figures) float64 { return float64(f.memory.pssKB) / 1024 }, pssBudget},
		{"of which anonymous (MB)", func(f *figures) float64 { return float64(f.memory.anonKB) / 1024 }, 0},
		{"idle CPU (millicores)", func(f *figures) float64 { return f.millicores }, idleCPUBudget},
	} {
		var cells []string
		for _, f := range agents {
			cells = append(cells, fmt.Sprintf("%.1f", row.value(f)))
		}
		x := row.value(micro) / row.value(kubelet)
		cells = append(cells, fmt.Sprintf("%.2fx", x), budgets(budget{"kubelet", x, row.max}))
		if baseline != nil {
			cells = append(cells, fmt.Sprintf("%.2fx", row.value(baseline)/row.value(kubelet)))
		}
		fmt.Fprintf(w, "%s\t\t%s\t\n", row.what, strings.Join(cells, "\t"))
	}
	w.Flush()

	// The samples behind the medians, the CPU time each start cost, and
	// each process's memory: benchmark logs are cut to a few lines, so they
	// are printed here.
	fmt.Fprintln(out)
	for _, f := range append([]*figures{floor}, agents...) {
		for _, size := range batchSizes {
			fmt.Fprintf(out, "%s, %d pods: start %s; stop %s; CPU per start: containerd %s, agent %s, machine %s\n", f.system, size,
				seconds(f.starts[size]), seconds(f.stops[size]), cpuSeconds(f.startCPU[size], runtimeCPU),
				cpuSeconds(f.startCPU[size], agentCPU), cpuSeconds(f.startCPU[size], machineCPU))
		}
		if f.agent {
			fmt.Fprintf(out, "%s, %d pods: %s\n", f.system, usagePods, strings.Join(f.perProcess, "; "))
		}
	}
}

// names are the systems' names as column headings.
func names(systems []*figures) string {
	out := make([]string, len(systems))
	for i, f := range systems {
		out[i] = f.system
	}
	return strings.Join(out, "\t")
}

// baselineCell is heading when a baseline ran.
func baselineCell(baseline *figures, heading string) string {
	if baseline == nil {
		return ""
	}
	return heading
}

// budget is one ratio of microlet's against a system's, and the most it
// may be (0: none).
type budget struct {
	against string
	ratio   float64
	max     float64
}

// budgets says whether each budget holds: "<= 1.10x floor ok, <= 1.00x
// kubelet MISSED", or "-" when none applies.
func budgets(bs ...budget) string {
	var out []string
	for _, b := range bs {
		if b.max == 0 {
			continue
		}
		verdict := "ok"
		if b.ratio > b.max {
			verdict = "MISSED"
		}
		out = append(out, fmt.Sprintf("<= %.2fx %s %s", b.max, b.against, verdict))
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ", ")
}

// seconds renders samples in seconds, in the order they were taken.
func seconds(samples []time.Duration) string {
	out := make([]string, len(samples))
	for i, d := range samples {
		out[i] = fmt.Sprintf("%.2f", d.Seconds())
	}
	return strings.Join(out, " ")
}

func runtimeCPU(u cpuUse) time.Duration { return u.runtime }
func agentCPU(u cpuUse) time.Duration   { return u.agent }
func machineCPU(u cpuUse) time.Duration { return u.machine }

// cpuSeconds renders one part of CPU uses, in seconds, with their median.
func cpuSeconds(uses []cpuUse, part func(cpuUse) time.Duration) string {
	samples := make([]time.Duration, len(uses))
	for i, u := range uses {
		samples[i] = part(u)
	}
	return fmt.Sprintf("%s (median %.2f)", seconds(samples), median(samples).Seconds())
}
