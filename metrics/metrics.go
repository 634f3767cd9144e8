// Package metrics exports pagemux's figures to Prometheus: lock waits and
// holds by lock kind and mode, queue depths and holder ages, give-ups, tool
// call latency by tool and outcome, and gauges the rest of the server
// registers (pages open, agents, Chrome launches). It is fed by a
// pagelock.Observer and by the tool middleware; it knows nothing of Chrome
// or MCP.
package metrics

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/pagemux/pagemux/pagelock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Buckets suit tool calls: 1 ms to 60 s.
var buckets = prometheus.ExponentialBucketsRange(0.001, 60, 17)

// Metrics is one server's registry. Make it with New.
type Metrics struct {
	reg      *prometheus.Registry
	mode     string
	wait     *prometheus.HistogramVec
	hold     *prometheus.HistogramVec
	failures *prometheus.CounterVec
	calls    *prometheus.HistogramVec
	etcd     *prometheus.HistogramVec
	// The action rules' (--rules): decisions by rule and outcome, their
	// cost, and reloads by result.
	decisions *prometheus.CounterVec
	cost      prometheus.Histogram
	reloads   *prometheus.CounterVec
}

// New returns the metrics of a server whose locks run in mode, with Go's
// process and runtime collectors.
func New(mode pagelock.Mode) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), mode: mode.String()}
	m.wait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "pagemux_lock_wait_seconds", Help: "How long calls waited for a lock, by lock kind (global, page, tracing, audit) and lock mode.", Buckets: buckets,
	}, []string{"lock", "mode"})
	m.hold = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "pagemux_lock_hold_seconds", Help: "How long calls held a lock, by lock kind and lock mode.", Buckets: buckets,
	}, []string{"lock", "mode"})
	m.failures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pagemux_lock_failures_total", Help: "Calls that gave up on a lock, by lock kind, mode and reason (timeout, busy, cancelled, closed).",
	}, []string{"lock", "mode", "reason"})
	m.calls = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "pagemux_tool_call_seconds", Help: "Tool call latency from arrival to answer, by tool and outcome (ok, error, cancelled).", Buckets: buckets,
	}, []string{"tool", "outcome"})
	m.etcd = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "pagemux_etcd_lock_acquire_seconds", Help: "With --etcd, how long calls took to get their locks in etcd (after their place in this process's queues), by outcome (ok, unavailable, timeout, cancelled, error).", Buckets: buckets,
	}, []string{"outcome"})
	m.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pagemux_rule_decisions_total", Help: "With --rules, decisions of the action rules, by the rule that decided (or last applied; \"\" for none) and outcome (allowed, refused, rate-limited, waited, replayed).",
	}, []string{"rule", "outcome"})
	m.cost = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "pagemux_rule_decision_seconds", Help: "With --rules, what deciding a call by the action rules cost, before any wait.", Buckets: prometheus.ExponentialBucketsRange(1e-6, 0.01, 14),
	})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pagemux_rules_reloads_total", Help: "With --rules, reloads of the rules file by result: ok (the new rules are in force) or error (they did not parse; the rules in force stay).",
	}, []string{"result"})
	m.reg.MustRegister(m.wait, m.hold, m.failures, m.calls, m.etcd, m.decisions, m.cost, m.reloads,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Kind is the label of a lock key: global, page, tracing, audit (the
// tracing and audit resources of every Chrome of a pool alike).
func Kind(k pagelock.Key) string {
	s := string(k)
	if strings.HasPrefix(s, "page/") {
		return "page"
	}
	if strings.HasPrefix(s, "rule:") {
		return "rule" // an action rule's exclusive resource: one label for all
	}
	if s == "" {
		return "unknown"
	}
	return string(k.Resource())
}

// Acquired, Released and Failed make Metrics a pagelock.Observer.
func (m *Metrics) Acquired(k pagelock.Key, waited time.Duration) {
	m.wait.WithLabelValues(Kind(k), m.mode).Observe(waited.Seconds())
}

func (m *Metrics) Released(k pagelock.Key, held time.Duration) {
	m.hold.WithLabelValues(Kind(k), m.mode).Observe(held.Seconds())
}

func (m *Metrics) Failed(k pagelock.Key, why string) {
	m.failures.WithLabelValues(Kind(k), m.mode, why).Inc()
}

// ToolCall records one tool call.
func (m *Metrics) ToolCall(tool, outcome string, took time.Duration) {
	m.calls.WithLabelValues(tool, outcome).Observe(took.Seconds())
}

// RuleDecision records one decision of the action rules.
func (m *Metrics) RuleDecision(rule, outcome string, cost time.Duration) {
	m.decisions.WithLabelValues(rule, outcome).Inc()
	m.cost.Observe(cost.Seconds())
}

// RulesReloaded records one reload of the rules file.
func (m *Metrics) RulesReloaded(ok bool) {
	result := "ok"
	if !ok {
		result = "error"
	}
	m.reloads.WithLabelValues(result).Inc()
}

// EtcdAcquire records one call's acquire of its locks in etcd.
func (m *Metrics) EtcdAcquire(took time.Duration, outcome string) {
	m.etcd.WithLabelValues(outcome).Observe(took.Seconds())
}

// WatchLocks registers the gauges read from locks at each scrape: calls
// queued, locks held and the oldest holder's age, by lock kind.
func (m *Metrics) WatchLocks(locks *pagelock.Locker) {
	m.reg.MustRegister(&lockCollector{locks: locks, mode: m.mode})
}

// Gauge registers a gauge whose value fn reads at each scrape, such as the
// pages open. name gets the pagemux_ prefix.
func (m *Metrics) Gauge(name, help string, fn func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pagemux_" + name, Help: help}, fn))
}

// Counter registers a counter whose value fn reads at each scrape, such as
// Chrome launches. name gets the pagemux_ prefix.
func (m *Metrics) Counter(name, help string, fn func() float64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "pagemux_" + name, Help: help}, fn))
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// lockCollector reads the locks' state when Prometheus scrapes.
type lockCollector struct {
	locks *pagelock.Locker
	mode  string
}

var (
	queuedDesc = prometheus.NewDesc("pagemux_lock_queue_depth", "Calls waiting now, by lock kind and mode.", []string{"lock", "mode"}, nil)
	heldDesc   = prometheus.NewDesc("pagemux_locks_held", "Locks held now, by lock kind and mode.", []string{"lock", "mode"}, nil)
	ageDesc    = prometheus.NewDesc("pagemux_lock_holder_age_seconds", "How long the oldest holder has held its lock, by lock kind and mode.", []string{"lock", "mode"}, nil)
)

func (c *lockCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queuedDesc
	ch <- heldDesc
	ch <- ageDesc
}

func (c *lockCollector) Collect(ch chan<- prometheus.Metric) {
	queued, held, age := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, kind := range []string{"global", "page", "tracing", "audit"} {
		queued[kind], held[kind], age[kind] = 0, 0, 0
	}
	for _, s := range c.locks.Stats() {
		kind := Kind(s.Key)
		queued[kind] += float64(s.Queued)
		if s.Holder != "" {
			held[kind]++
			age[kind] = max(age[kind], s.HeldFor.Seconds())
		}
	}
	for kind := range queued {
		ch <- prometheus.MustNewConstMetric(queuedDesc, prometheus.GaugeValue, queued[kind], kind, c.mode)
		ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, held[kind], kind, c.mode)
		ch <- prometheus.MustNewConstMetric(ageDesc, prometheus.GaugeValue, age[kind], kind, c.mode)
	}
}

// RegistrySize reads the size of the page registry that pagemux processes
// share through etcd: the tabs with a shared page id, and the agents known
// to every replica (cluster.Locks.RegistrySize).
type RegistrySize func(ctx context.Context) (pages, agents int, err error)

// registryRead bounds the read of the registry's size at one scrape, so
// that an etcd out of reach does not hold up the other metrics.
const registryRead = 2 * time.Second

// WatchRegistry registers pagemux_etcd_registry_entries, read with size at
// each scrape, by kind: pages and agents. A scrape that cannot read it
// (etcd is out of reach) leaves the metric out rather than fail, so the
// other metrics still come; absent() tells of it.
func (m *Metrics) WatchRegistry(size RegistrySize) {
	m.reg.MustRegister(&registryCollector{size: size})
}

var registryDesc = prometheus.NewDesc("pagemux_etcd_registry_entries", "With --etcd, what the shared page registry holds now, by kind: pages (tabs of every browser with a shared page id) and agents (those that own a page, have one selected or have a session, in any replica).", []string{"kind"}, nil)

// registryCollector reads the registry's size when Prometheus scrapes.
type registryCollector struct{ size RegistrySize }

func (c *registryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- registryDesc }

func (c *registryCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), registryRead)
	defer cancel()
	pages, agents, err := c.size(ctx)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(registryDesc, prometheus.GaugeValue, float64(pages), "pages")
	ch <- prometheus.MustNewConstMetric(registryDesc, prometheus.GaugeValue, float64(agents), "agents")
}
