//go:build e2e

package nodebench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// The budgets of the issue "Run pods on a real container runtime":
// microlet's start and stop against the floor's, its memory and idle CPU
// (core and every plugin) against the kubelet's.
const (
	startBudget = 1.15
	stopBudget  = 1.30
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
	fmt.Fprintf(w, "\npod start and stop, median of %d (s)\tfloor\t%s\tmicrolet/floor\tbudget\t%s\n", runs, names(agents), baselineCell(baseline, "baseline/floor\t"))
	for _, row := range []struct {
		what   string
		median func(*figures, int) time.Duration
		budget float64
	}{
		{"start", (*figures).start, startBudget},
		{"stop", (*figures).stop, stopBudget},
	} {
		for _, size := range batchSizes {
			cells := []string{fmt.Sprintf("%.2f", row.median(floor, size).Seconds())}
			for _, f := range agents {
				cells = append(cells, fmt.Sprintf("%.2f", row.median(f, size).Seconds()))
			}
			x := ratio(row.median(micro, size), row.median(floor, size))
			cells = append(cells, fmt.Sprintf("%.2fx", x), verdict(x <= row.budget, fmt.Sprintf("<= %.2fx", row.budget)))
			if baseline != nil {
				cells = append(cells, fmt.Sprintf("%.2fx", ratio(row.median(baseline, size), row.median(floor, size))))
			}
			fmt.Fprintf(w, "%s, %d pods\t%s\t\n", row.what, size, strings.Join(cells, "\t"))
		}
	}
	fmt.Fprintf(w, "\nat %d pods (microlet: core + plugins)\t\t%s\tmicrolet/kubelet\tbudget\t%s\n", usagePods, names(agents), baselineCell(baseline, "baseline/kubelet\t"))
	for _, row := range []struct {
		what     string
		value    func(*figures) float64
		budgeted bool
	}{
		{"RSS (MB)", func(f *figures) float64 { return float64(f.memory.rssKB) / 1024 }, false},
		{"PSS (MB)", func(f *figures) float64 { return float64(f.memory.pssKB) / 1024 }, true},
		{"of which anonymous (MB)", func(f *figures) float64 { return float64(f.memory.anonKB) / 1024 }, false},
		{"idle CPU (millicores)", func(f *figures) float64 { return f.millicores }, true},
	} {
		var cells []string
		for _, f := range agents {
			cells = append(cells, fmt.Sprintf("%.1f", row.value(f)))
		}
		x := row.value(micro) / row.value(kubelet)
		budget := "-"
		if row.budgeted {
			budget = verdict(x < 1, "< 1x")
		}
		cells = append(cells, fmt.Sprintf("%.2fx", x), budget)
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

func verdict(ok bool, budget string) string {
	if ok {
		return budget + " ok"
	}
	return budget + " MISSED"
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
