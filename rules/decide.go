package rules

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/pagemux/pagemux/policy"
)

// Call is what a decision knows of a tool call: plain facts the caller
// gathers before the call takes any lock.
type Call struct {
	// Agent is the caller's name as rules match it.
	Agent string
	Tool  string
	// Args are the call's arguments as the schema checked them.
	Args map[string]any
	// Page is the id of the page the call acts on, 0 for none.
	Page int
	// URL is where the call acts: the URL a navigation goes to, else its
	// page's URL; "" for none.
	URL string
	// Navigates says the call loads URL in a page (navigate_page to a
	// URL, new_page).
	Navigates bool
	// Opens says the call opens a page.
	Opens bool
	// Pages is how many pages the agent has open, for maxPages.
	Pages int
	// Task says the call runs as an MCP task; Tasks is how many the agent
	// runs now.
	Task  bool
	Tasks int
	// Document numbers the page's document: it changes with each new
	// document the page loads.
	Document int
	// Elements are the elements the call names by uid, as the page's last
	// snapshot showed them.
	Elements []Element
	// IdempotencyKey is the key the caller gave the call, "" for none:
	// the call is then once-only under that key.
	IdempotencyKey string

	url    policy.URL // URL, read once
	parsed bool
}

// parsedURL is c.URL read for matching, once a call.
func (c *Call) parsedURL() policy.URL {
	if !c.parsed {
		c.url, c.parsed = policy.ParseURL(c.URL), true
	}
	return c.url
}

// Element is an element a call names.
type Element struct {
	UID  string
	Role string
	Name string
	// InLastSnapshot says the uid is in the calling agent's own last
	// snapshot of the page's current document.
	InLastSnapshot bool
}

func (c *Call) anyElement(f func(string) bool) bool {
	for _, e := range c.Elements {
		if f(e.Name) {
			return true
		}
	}
	return false
}

// Outcome is what a decision says of a call.
type Outcome string

// The outcomes. Waited and Replayed are the tools package's, after the
// decision: the call waited for a resource, or answered an earlier call's
// result.
const (
	Allowed     Outcome = "allowed"
	Refused     Outcome = "refused"
	RateLimited Outcome = "rate-limited"
	Waited      Outcome = "waited"
	Replayed    Outcome = "replayed"
)

// Decision is what the rules say of one call.
type Decision struct {
	Outcome Outcome
	// Rule cites the rule that refused or limited the call: its kind, name
	// and line; "" when allowed.
	Rule string
	// Reason says why, and what the agent may do instead.
	Reason string
	// RetryAfter is, for RateLimited, when a call would be let through.
	RetryAfter time.Duration
	// Delay is how long an allowed call waits for its rate's token first.
	Delay time.Duration
	// Resources are the exclusive resources the call takes, sorted by Key.
	Resources []Resource
	// Once is set for a once-only call.
	Once *OnceKey
	// Applied cites every rule that matched the call, for the log.
	Applied []string
	// Cost is how long the decision took.
	Cost time.Duration
}

// Resource is an exclusive resource a call takes.
type Resource struct {
	// Key names it: "rule:NAME:" and its template expanded.
	Key  string
	Rule string
	// Lease keeps it the agent's between calls while it is idle less than
	// this; 0 holds it for the call alone.
	Lease time.Duration
	// Timeout bounds the wait for it; 0: the server's lock wait.
	Timeout time.Duration
}

// OnceKey is the record key of a once-only call.
type OnceKey struct {
	Key  string
	Rule string
	TTL  time.Duration
}

// Engine decides calls by the Set in force, which Swap replaces at once:
// a call decided after the swap sees the new set, one decided before keeps
// the old. It keeps the rates' buckets across swaps. Safe for concurrent
// use; its zero value is not ready: use NewEngine.
type Engine struct {
	set     atomic.Pointer[Set]
	mu      sync.Mutex
	buckets map[bucketKey]*rate.Limiter
	now     func() time.Time
}

// bucketKey names one token bucket: a rule's rate for one agent (and
// site).
type bucketKey struct {
	rule  string // the agent rule's pattern and the rate, so an edited rate starts afresh
	agent string
	site  string
}

// NewEngine returns an engine deciding by s (nil: no rules).
func NewEngine(s *Set) *Engine {
	e := &Engine{buckets: map[bucketKey]*rate.Limiter{}, now: time.Now}
	e.set.Store(s)
	return e
}

// Swap puts s in force for every call decided after it.
func (e *Engine) Swap(s *Set) { e.set.Store(s) }

// Set is the set in force; nil for none.
func (e *Engine) Set() *Set { return e.set.Load() }

// Decide says what the rules in force say of c. An allowed call's rate
// tokens are taken; a refused one takes none.
func (e *Engine) Decide(c *Call) Decision { return e.DecideBy(e.set.Load(), c) }

// DecideBy is Decide by s, a set the caller read from Set, with the
// engine's buckets: a caller that gathered the call's facts by what s
// asks (Needs) decides by the same s, whatever a reload swaps in
// meanwhile.
func (e *Engine) DecideBy(s *Set, c *Call) Decision {
	start := time.Now()
	d := e.decide(s, c, false)
	d.Cost = time.Since(start)
	return d
}

// Explain is Decide without taking tokens: what would happen.
func (e *Engine) Explain(c *Call) Decision {
	return e.decide(e.set.Load(), c, true)
}

func (e *Engine) decide(s *Set, c *Call, dry bool) Decision {
	d := Decision{Outcome: Allowed, Applied: make([]string, 0, 4)}
	if s == nil {
		return d
	}
	ar := s.agentRule(c.Agent)
	if ar != nil {
		d.Applied = append(d.Applied, ar.id)
		if why := ar.refuses(c); why != "" {
			return refuse(d, ar.id, why)
		}
	}
	tr := s.rulesFor(c)
	for _, r := range tr.require {
		if !r.when.match(c) {
			continue
		}
		d.Applied = append(d.Applied, r.id)
		if why := r.refuses(c); why != "" {
			return refuse(d, r.id, why)
		}
	}
	for _, r := range tr.exclusive {
		if !r.when.match(c) {
			continue
		}
		d.Applied = append(d.Applied, r.id)
		d.Resources = append(d.Resources, Resource{
			Key: "rule:" + r.Name + ":" + r.resource.expand(c), Rule: r.id,
			Lease: time.Duration(r.Lease), Timeout: time.Duration(r.Timeout),
		})
	}
	sort.Slice(d.Resources, func(i, j int) bool { return d.Resources[i].Key < d.Resources[j].Key })
	for _, r := range tr.once {
		if !r.when.match(c) {
			continue
		}
		d.Applied = append(d.Applied, r.id)
		ttl := time.Duration(r.TTL)
		if ttl == 0 {
			ttl = DefaultOnceTTL
		}
		d.Once = &OnceKey{Key: "rule:" + r.Name + ":" + r.key.expand(c), Rule: r.id, TTL: ttl}
		break
	}
	if d.Once == nil && c.IdempotencyKey != "" {
		d.Once = &OnceKey{Key: "key:" + c.Agent + ":" + c.IdempotencyKey, Rule: "idempotencyKey", TTL: DefaultOnceTTL}
	}
	if ar != nil {
		return e.rates(d, ar, c, dry)
	}
	return d
}

// LeaseKey is the resource key the exclusive rule cited as rule gives
// the call, and true, when the rule's URLs and agents take the call in
// (its tools and element are not asked): a lease taken under the rule
// ends once the agent's page no longer gives the same key.
func (s *Set) LeaseKey(rule string, c *Call) (string, bool) {
	if s == nil {
		return "", false
	}
	for _, r := range s.exclusive {
		if r.id != rule {
			continue
		}
		if len(r.when.agents) > 0 && !anyGlob(r.when.agents, c.Agent) || len(r.when.urls) > 0 && !anyURL(r.when.urls, c.parsedURL()) {
			return "", false
		}
		return "rule:" + r.Name + ":" + r.resource.expand(c), true
	}
	return "", false
}

// agentRule is the first agent rule whose pattern matches the agent,
// cached for the first maxCachedAgents names.
func (s *Set) agentRule(agent string) *agentRule {
	if r, ok := s.byAgent.Load(agent); ok {
		return r.(*agentRule)
	}
	var found *agentRule
	for _, r := range s.agents {
		if glob(r.Agent, agent) {
			found = r
			break
		}
	}
	if s.cached.Add(1) <= maxCachedAgents {
		s.byAgent.Store(agent, found)
	}
	return found
}

// maxCachedAgents bounds the agent names a Set caches the rule of.
const maxCachedAgents = 10000

func refuse(d Decision, rule, why string) Decision {
	d.Outcome, d.Rule, d.Reason = Refused, rule, why
	d.Resources, d.Once = nil, nil
	return d
}

// refuses says why the agent rule refuses c, "" if it does not.
func (r *agentRule) refuses(c *Call) string {
	denied := r.deny != nil && r.deny.has(c) // no deny list denies nothing
	if denied || !r.allow.has(c) {
		what := "the tool " + c.Tool
		if denied && !r.deny.tools[c.Tool] {
			what = "a call that names a file of the host"
		}
		may := "tools: " + strings.Join(r.Tools, ", ")
		if len(r.Tools) == 0 {
			may = "any tool but " + strings.Join(r.Deny, ", ")
		}
		return fmt.Sprintf("%s is not allowed to agent %s (it may use %s)", what, c.Agent, may)
	}
	if len(r.URLs) > 0 && c.URL != "" && c.URL != "about:blank" && !anyURL(r.urls, c.parsedURL()) {
		if c.Navigates {
			return fmt.Sprintf("agent %s may not load %s; it may load %s", c.Agent, c.URL, strings.Join(r.URLs, ", "))
		}
		return fmt.Sprintf("the page is at %s, outside what agent %s may act at (%s); navigate it back, or open a page there", c.URL, c.Agent, strings.Join(r.URLs, ", "))
	}
	if r.MaxPages > 0 && c.Opens && c.Pages >= r.MaxPages {
		return fmt.Sprintf("agent %s has %d pages open, its most; close one (close_page) before opening another", c.Agent, c.Pages)
	}
	if r.MaxTasks > 0 && c.Task && c.Tasks >= r.MaxTasks {
		return fmt.Sprintf("agent %s runs %d tasks, its most; wait for one to end", c.Agent, c.Tasks)
	}
	return ""
}

// refuses says why the requirement refuses c, "" if it does not.
func (r *requireRule) refuses(c *Call) string {
	if len(r.At) > 0 && !anyURL(r.at, c.parsedURL()) {
		return fmt.Sprintf("%s may act only at %s, and the page is at %s", c.Tool, strings.Join(r.At, ", "), c.URL)
	}
	if r.InLastSnapshot {
		for _, el := range c.Elements {
			if !el.InLastSnapshot {
				return fmt.Sprintf("uid %s is not in your last snapshot of this page's current document; take a snapshot and act on what it shows", el.UID)
			}
		}
	}
	return ""
}

// rates takes the call's tokens from the agent rule's buckets: the agent's
// calls, and its navigations to the call's site.
func (e *Engine) rates(d Decision, r *agentRule, c *Call, dry bool) Decision {
	type take struct {
		spec *bucketSpec
		key  bucketKey
		what string
	}
	var takes []take
	if r.rate != nil {
		takes = append(takes, take{r.rate, bucketKey{rule: r.rateKey, agent: c.Agent}, "calls"})
	}
	if r.navs != nil && c.Navigates {
		site := c.site()
		takes = append(takes, take{r.navs, bucketKey{rule: r.navKey, agent: c.Agent, site: site}, "navigations to "})
	}
	if len(takes) == 0 {
		return d
	}
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	var taken []*rate.Reservation
	for _, t := range takes {
		l := e.buckets[t.key]
		if l == nil {
			if len(e.buckets) >= maxBuckets {
				e.pruneLocked(now)
			}
			l = rate.NewLimiter(t.spec.every, t.spec.burst)
			e.buckets[t.key] = l
		}
		if dry {
			if tok := l.TokensAt(now); tok < 1 {
				d.Delay = max(d.Delay, time.Duration(math.Ceil((1-tok)/float64(t.spec.every)*float64(time.Second))))
			}
			continue
		}
		res := l.ReserveN(now, 1)
		delay := res.DelayFrom(now)
		if !res.OK() || delay > t.spec.wait {
			res.CancelAt(now)
			for _, p := range taken {
				p.CancelAt(now)
			}
			d = refuse(d, r.id, fmt.Sprintf("agent %s is past its rate of %s (%s per %s, bursts of %d); retry after %s",
				c.Agent, t.what+t.key.site, trimFloat(rateOf(t.spec)), t.spec.per, t.spec.burst, delay.Round(time.Millisecond)))
			d.Outcome, d.RetryAfter = RateLimited, delay
			return d
		}
		taken = append(taken, res)
		d.Delay = max(d.Delay, delay)
	}
	return d
}

func rateOf(b *bucketSpec) float64 {
	if b.per == "min" {
		return float64(b.every) * 60
	}
	return float64(b.every)
}

func trimFloat(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", f), "0"), ".")
}

// maxBuckets is how many buckets the engine keeps before it drops the full
// ones, which a new bucket would be the same as.
const maxBuckets = 10000

func (e *Engine) pruneLocked(now time.Time) {
	for k, l := range e.buckets {
		if l.TokensAt(now) >= float64(l.Burst()) {
			delete(e.buckets, k)
		}
	}
}
