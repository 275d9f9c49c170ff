package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the result as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Table renders the result for a terminal: one row per target with
// throughput and latency percentiles, the A/B ratios, a per-method
// breakdown when the workload mixed methods, and the errors by code.
func (r *Result) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s — concurrency %d, %d operations in %.2fs (stopped by %s)\n\n",
		r.Workload, r.Concurrency, r.Operations, r.Elapsed, r.StoppedBy)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tcalls\terrors\tok/s\titems/s\tmean ms\tp50\tp90\tp95\tp99\tp99.9\tmax\t")
	for _, t := range r.Targets {
		l := t.Latency
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%.1f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n",
			t.Name, t.Calls, pct(t.ErrorRate), t.Throughput, t.ItemsPerSec, l.MeanMs, l.P50Ms, l.P90Ms, l.P95Ms, l.P99Ms, l.P999Ms, l.MaxMs)
	}
	tw.Flush()
	if len(r.Ratios) > 0 {
		b.WriteString("\nA/B (target ÷ baseline; latency >1 is slower, capacity >1 is faster)\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "target\tbaseline\tmean\tp50\tp90\tp99\tcapacity\terror rate Δ\t")
		for _, x := range r.Ratios {
			fmt.Fprintf(tw, "%s\t%s\t%.3f×\t%.3f×\t%.3f×\t%.3f×\t%.3f×\t%+.2f pp\t\n",
				x.Target, x.Baseline, x.MeanMs, x.P50Ms, x.P90Ms, x.P99Ms, x.Throughput, 100*x.ErrorRateDelta)
		}
		tw.Flush()
	}
	multi := false
	for _, t := range r.Targets {
		multi = multi || len(t.Methods) > 1
	}
	if multi {
		b.WriteString("\nby method (successful calls)\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "target\tmethod\tcalls\tmean ms\tp50\tp99\t")
		for _, t := range r.Targets {
			for _, m := range methodNames(t) {
				l := t.Methods[m]
				fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f\t%.3f\t\n", t.Name, m, l.Count, l.MeanMs, l.P50Ms, l.P99Ms)
			}
		}
		tw.Flush()
	}
	for _, t := range r.Targets {
		if len(t.ErrorsByCode) == 0 {
			continue
		}
		var codes []string
		for c := range t.ErrorsByCode {
			codes = append(codes, c)
		}
		sort.Slice(codes, func(i, j int) bool {
			if t.ErrorsByCode[codes[i]] != t.ErrorsByCode[codes[j]] {
				return t.ErrorsByCode[codes[i]] > t.ErrorsByCode[codes[j]]
			}
			return codes[i] < codes[j]
		})
		parts := make([]string, len(codes))
		for i, c := range codes {
			parts[i] = fmt.Sprintf("%s ×%d", c, t.ErrorsByCode[c])
		}
		fmt.Fprintf(&b, "\nerrors on %s: %s\n", t.Name, strings.Join(parts, ", "))
	}
	return b.String()
}

func pct(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) }
