package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// series is the timings of one kind of call. Only calls that succeeded with
// the expected answer count as samples; the others count as errors, and the
// first one's exact text is kept for the report.
type series struct {
	Name       string  `json:"name"`
	Calls      int     `json:"calls"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	P50        float64 `json:"p50_ms"`
	P99        float64 `json:"p99_ms"`
	Min        float64 `json:"min_ms"`
	Max        float64 `json:"max_ms"`
	Mean       float64 `json:"mean_ms"`
	Slow       int     `json:"slow_calls"` // samples over slowFactor×p50 and over slowFloor
	Samples    int     `json:"samples"`

	took []time.Duration
}

const (
	slowFactor = 10
	slowFloor  = 50 * time.Millisecond
)

func (s *series) add(d time.Duration) {
	s.Calls++
	s.took = append(s.took, d)
}

func (s *series) fail(text string) {
	s.Calls++
	s.Errors++
	if s.FirstError == "" {
		s.FirstError = text
	}
}

// finish computes the figures. Percentiles are nearest-rank: p99 of 50
// samples is the largest one.
func (s *series) finish() {
	s.Samples = len(s.took)
	if len(s.took) == 0 {
		return
	}
	sorted := slices.Clone(s.took)
	slices.Sort(sorted)
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	s.P50 = ms(rank(sorted, 0.50))
	s.P99 = ms(rank(sorted, 0.99))
	s.Min, s.Max = ms(sorted[0]), ms(sorted[len(sorted)-1])
	s.Mean = ms(sum / time.Duration(len(sorted)))
	limit := max(time.Duration(slowFactor)*rank(sorted, 0.50), slowFloor)
	for _, d := range sorted {
		if d > limit {
			s.Slow++
		}
	}
}

func rank(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Millisecond)*1000) / 1000
}

// fmtMS prints milliseconds with a precision that suits their size.
func fmtMS(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	default:
		return fmt.Sprintf("%.2f ms", v)
	}
}
