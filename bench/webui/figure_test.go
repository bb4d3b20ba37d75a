package webui

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// figure reports a figure both to the benchmark framework and as a
// `FIGURE name value unit` line that scripts/bench collects.
func figure(b *testing.B, name string, v float64, unit string) {
	b.ReportMetric(v, name+"-"+unit)
	fmt.Printf("FIGURE %s %.2f %s\n", name, v, unit)
}

// scaled reports a figure at n agents beside the same figure at 10 (its
// floor, measured in the same run) and their ratio: name_nN, with
// name_nN_floor and name_nN_ratio, which scripts/bench prints as one row.
// At 10 itself it is the figure alone.
func scaled(b *testing.B, name string, n int, v, at10 float64, unit string) {
	k := fmt.Sprintf("%s_n%d", name, n)
	figure(b, k, v, unit)
	if n == 10 || at10 == 0 {
		return
	}
	figure(b, k+"_floor", at10, unit)
	figure(b, k+"_ratio", v/at10, "x")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// median of a sample (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func durations(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = ms(d)
	}
	return out
}
