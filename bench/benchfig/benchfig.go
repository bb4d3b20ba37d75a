// Package benchfig is how st's benchmarks report a figure: to the
// benchmark framework, and as a `FIGURE name value unit` line that
// scripts/bench collects into its table (a figure beside its floor and
// their ratio is the three lines name, name_floor and name_ratio, one row
// there). It also holds the small statistics they share. Every benchmark
// package (bench, bench/cplane, bench/history, bench/webui) reports
// through it, so that the line scripts/bench reads has one writer.
package benchfig

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// Figure reports v in unit as name.
func Figure(b *testing.B, name string, v float64, unit string) {
	b.ReportMetric(v, name+"-"+unit)
	fmt.Printf("FIGURE %s %.2f %s\n", name, v, unit)
}

// Ratio reports v with its floor and their ratio (name, name_floor,
// name_ratio); with no floor (0), no ratio.
func Ratio(b *testing.B, name string, v, floor float64, unit string) {
	Figure(b, name, v, unit)
	Figure(b, name+"_floor", floor, unit)
	if floor > 0 {
		Figure(b, name+"_ratio", v/floor, "x")
	}
}

// RatioMs is Ratio of two durations, in milliseconds.
func RatioMs(b *testing.B, name string, v, floor time.Duration) {
	Ratio(b, name, Ms(v), Ms(floor), "ms")
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Stats is a sample of durations, sorted.
type Stats []time.Duration

// NewStats sorts a copy of ds.
func NewStats(ds []time.Duration) Stats {
	s := append(Stats(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}

// Pct is the nearest-rank percentile p (0..100); 0 for no sample.
func (s Stats) Pct(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	i := int(p/100*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Median is the sample's median; 0 for none.
func (s Stats) Median() time.Duration {
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Median is the median of xs; 0 for none.
func Median(xs []float64) float64 {
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
