package webui

import (
	"fmt"
	"testing"
	"time"

	"github.com/sophonz/st/bench/benchfig"
)

// scaled reports a figure at n agents beside the same figure at 10 (its
// floor, measured in the same run) and their ratio: name_nN, with
// name_nN_floor and name_nN_ratio, which scripts/bench prints as one row.
// At 10 itself it is the figure alone.
func scaled(b *testing.B, name string, n int, v, at10 float64, unit string) {
	k := fmt.Sprintf("%s_n%d", name, n)
	benchfig.Figure(b, k, v, unit)
	if n == 10 || at10 == 0 {
		return
	}
	benchfig.Figure(b, k+"_floor", at10, unit)
	benchfig.Figure(b, k+"_ratio", v/at10, "x")
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
		out[i] = benchfig.Ms(d)
	}
	return out
}
