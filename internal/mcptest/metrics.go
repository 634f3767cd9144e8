package mcptest

import (
	"fmt"
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one scrape of a Prometheus text exposition, by family name.
// Unlike the rest of this package it needs no testing.TB, so that the
// benchmark reads pagemux's /metrics with it too.
type Metrics map[string]*dto.MetricFamily

// ParseMetrics parses a text exposition (what /metrics serves).
func ParseMetrics(r io.Reader) (Metrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing the metrics: %w", err)
	}
	return Metrics(fams), nil
}

// ScrapeMetrics gets url (…/metrics), with a bearer token unless secret is
// "", and parses it.
func ScrapeMetrics(url, secret string) (Metrics, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return ParseMetrics(resp.Body)
}

// Sample is one series of a family: a gauge's or counter's value, or a
// histogram's (or summary's) sample count and sum.
type Sample struct {
	Value      float64
	Count      uint64
	Sum        float64
	Histogram  bool
	labelPairs []*dto.LabelPair
}

// Find returns the series of family name whose labels include labels,
// given as name, value pairs ("tool", "click"); ok is false when the family
// or such a series is missing. With several matches the first is returned;
// Total adds them up instead.
func (m Metrics) Find(name string, labels ...string) (Sample, bool) {
	ss := m.all(name, labels)
	if len(ss) == 0 {
		return Sample{}, false
	}
	return ss[0], true
}

// Total adds up every series of family name whose labels include labels:
// their values, and their histograms' counts and sums.
func (m Metrics) Total(name string, labels ...string) Sample {
	var t Sample
	for _, s := range m.all(name, labels) {
		t.Value += s.Value
		t.Count += s.Count
		t.Sum += s.Sum
		t.Histogram = t.Histogram || s.Histogram
	}
	return t
}

func (m Metrics) all(name string, labels []string) []Sample {
	f, ok := m[name]
	if !ok {
		return nil
	}
	var out []Sample
	for _, met := range f.GetMetric() {
		if !hasLabels(met.GetLabel(), labels) {
			continue
		}
		s := Sample{labelPairs: met.GetLabel()}
		switch {
		case met.Histogram != nil:
			s.Histogram, s.Count, s.Sum = true, met.Histogram.GetSampleCount(), met.Histogram.GetSampleSum()
		case met.Summary != nil:
			s.Histogram, s.Count, s.Sum = true, met.Summary.GetSampleCount(), met.Summary.GetSampleSum()
		case met.Counter != nil:
			s.Value = met.Counter.GetValue()
		case met.Gauge != nil:
			s.Value = met.Gauge.GetValue()
		case met.Untyped != nil:
			s.Value = met.Untyped.GetValue()
		}
		out = append(out, s)
	}
	return out
}

// Label returns the value of the series' label name, "" without it.
func (s Sample) Label(name string) string {
	for _, lp := range s.labelPairs {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// Each calls fn for every series of family name, for checks over all of
// them (no tool counted that was never called).
func (m Metrics) Each(name string, fn func(Sample)) {
	for _, s := range m.all(name, nil) {
		fn(s)
	}
}

func hasLabels(have []*dto.LabelPair, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		found := false
		for _, lp := range have {
			if lp.GetName() == want[i] && lp.GetValue() == want[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
