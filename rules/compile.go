package rules

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/publicsuffix"
	"golang.org/x/time/rate"

	"github.com/pagemux/pagemux/policy"
)

// Set is a rules file compiled, ready to decide. It does not change once
// made: a reload makes a new Set (Engine.Swap). Safe for concurrent use.
type Set struct {
	// Name is the file's name, as errors and decisions cite it.
	Name      string
	agents    []*agentRule
	exclusive []*exclusiveRule
	once      []*onceRule
	require   []*requireRule
	// byTool are, for each tool, the rules other than agents' that may
	// match its calls, in file order: a call checks those alone.
	byTool map[string]*toolRules
	// byAgent caches each agent name's agent rule (nil for none).
	byAgent sync.Map
	cached  atomic.Int32
	// Holds bound what agents hold across calls.
	Holds Holds
}

// toolRules are the rules that may match one tool's calls: by the host
// their URL patterns name, and those that may match any host (wild).
type toolRules struct {
	byHost map[string]*ruleList
	wild   ruleList
	// names and seen say whether a rule of the tool reads an element's
	// name (an element pattern, {element}) or whether it is in the
	// agent's last snapshot (inLastSnapshot).
	names, seen bool
}

// ruleList are rules in file order.
type ruleList struct {
	exclusive []*exclusiveRule
	once      []*onceRule
	require   []*requireRule
}

// index fills byTool: a rule goes to each tool its when names, or to all
// of them when it names none or names the files group (a call of any tool
// may name a file); under each, to the hosts its URL patterns name, or to
// wild when one of them names no single host.
func (s *Set) index() {
	s.byTool = map[string]*toolRules{}
	for _, t := range AllTools {
		s.byTool[t] = &toolRules{byHost: map[string]*ruleList{}}
	}
	each := func(m *matcher, names, seen bool, add func(*ruleList)) {
		hosts, ok := m.hosts()
		for _, t := range AllTools {
			if m.tools != nil && !m.tools.files && !m.tools.tools[t] {
				continue
			}
			tr := s.byTool[t]
			tr.names = tr.names || names || m.element != nil
			tr.seen = tr.seen || seen
			if !ok {
				add(&tr.wild)
				continue
			}
			for _, h := range hosts {
				if tr.byHost[h] == nil {
					tr.byHost[h] = &ruleList{}
				}
				add(tr.byHost[h])
			}
		}
	}
	for i, r := range s.exclusive {
		r.index = i
		each(r.when, r.resource.names("element"), false, func(l *ruleList) { l.exclusive = append(l.exclusive, r) })
	}
	for i, r := range s.once {
		r.index = i
		each(r.when, r.key.names("element"), false, func(l *ruleList) { l.once = append(l.once, r) })
	}
	for i, r := range s.require {
		r.index = i
		each(r.when, false, r.InLastSnapshot, func(l *ruleList) { l.require = append(l.require, r) })
	}
}

// hosts are the hosts the matcher's URL patterns name, and true, when
// each names one; false when it has none or one may match many hosts.
func (m *matcher) hosts() ([]string, bool) {
	if len(m.urls) == 0 {
		return nil, false
	}
	var hs []string
	for _, p := range m.urls {
		h, ok := p.Host()
		if !ok {
			return nil, false
		}
		if !slices.Contains(hs, h) {
			hs = append(hs, h)
		}
	}
	return hs, true
}

// Needs says what the rules ask of a call of tool beyond its arguments:
// the names of the elements it acts on (as the page's last snapshot shows
// them), and whether they are in the agent's own last snapshot. A caller
// gathers only those: a lookup in a big snapshot's text costs more than
// a decision.
func (s *Set) Needs(tool string) (names, seen bool) {
	if s == nil {
		return false, false
	}
	if tr := s.byTool[tool]; tr != nil {
		return tr.names, tr.seen
	}
	return false, false
}

// names reports whether the template uses variable v.
func (t template) names(v string) bool {
	for i := 1; i < len(t); i += 2 {
		if t[i] == v {
			return true
		}
	}
	return false
}

// rulesFor are the rules that may match c, in file order.
func (s *Set) rulesFor(c *Call) ruleList {
	tr := s.byTool[c.Tool]
	if tr == nil {
		return ruleList{} // a tool rules do not know matches none of them
	}
	hl := tr.byHost[c.parsedURL().Host()]
	if hl == nil {
		return tr.wild
	}
	return ruleList{
		exclusive: merge(hl.exclusive, tr.wild.exclusive, func(r *exclusiveRule) int { return r.index }),
		once:      merge(hl.once, tr.wild.once, func(r *onceRule) int { return r.index }),
		require:   merge(hl.require, tr.wild.require, func(r *requireRule) int { return r.index }),
	}
}

// merge merges two lists in file order.
func merge[T any](a, b []T, index func(T) int) []T {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make([]T, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if index(a[0]) < index(b[0]) {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// Count is how many rules the set has.
func (s *Set) Count() int {
	if s == nil {
		return 0
	}
	return len(s.agents) + len(s.exclusive) + len(s.once) + len(s.require)
}

type agentRule struct {
	*AgentRule
	id          string
	allow, deny *toolSet
	urls        []policy.Pattern
	rate, navs  *bucketSpec
	// rateKey and navKey name the rule's buckets: an edit of the rate
	// gives new ones.
	rateKey, navKey string
}

type exclusiveRule struct {
	*Exclusive
	id       string
	index    int
	when     *matcher
	resource template
}

type onceRule struct {
	*OnceRule
	id    string
	index int
	when  *matcher
	key   template
}

type requireRule struct {
	*Require
	id    string
	index int
	when  *matcher
	at    []policy.Pattern
}

// bucketSpec is a Rate compiled.
type bucketSpec struct {
	every rate.Limit
	burst int
	wait  time.Duration
	per   string // "s" or "min", for messages
}

// matcher is a Match compiled.
type matcher struct {
	agents  []string
	tools   *toolSet
	urls    []policy.Pattern
	element func(string) bool
}

// compile checks f and makes its Set.
func compile(name string, f *File) (*Set, error) {
	s := &Set{Name: name, Holds: f.Holds}
	fail := func(line int, rule, format string, args ...any) error {
		return &Error{File: name, Line: line, Rule: rule, Msg: fmt.Sprintf(format, args...)}
	}
	for i, r := range f.Agents {
		id := fmt.Sprintf("agents[%d]", i)
		if r == nil || r.Agent == "" {
			return nil, fail(lineOf(r), id, "no agent: name the agents the entry is for, a glob such as reader-* or *")
		}
		id += fmt.Sprintf(" (agent %q, line %d)", r.Agent, r.line)
		if err := checkTools(r.Tools); err != nil {
			return nil, fail(r.line, id, "tools: %v", err)
		}
		if err := checkTools(r.Deny); err != nil {
			return nil, fail(r.line, id, "deny: %v", err)
		}
		if err := checkURLs(r.URLs); err != nil {
			return nil, fail(r.line, id, "urls: %v", err)
		}
		if r.MaxPages < 0 || r.MaxTasks < 0 {
			return nil, fail(r.line, id, "maxPages and maxTasks must not be negative (0: no bound of the rule's)")
		}
		ar := &agentRule{AgentRule: r, id: id, allow: newToolSet(r.Tools), deny: newToolSet(r.Deny), urls: patterns(r.URLs)}
		var err error
		if ar.rate, err = r.Rate.spec(); err != nil {
			return nil, fail(r.line, id, "rate: %v", err)
		}
		if ar.navs, err = r.Navigations.spec(); err != nil {
			return nil, fail(r.line, id, "navigations: %v", err)
		}
		ar.rateKey, ar.navKey = fmt.Sprint(r.Agent, r.Rate), fmt.Sprint(r.Agent, r.Navigations)
		s.agents = append(s.agents, ar)
	}
	names := map[string]int{}
	named := func(kind, n string, line int) (string, error) {
		if n == "" {
			return "", fail(line, kind, "no name: give the rule a name, which decisions and errors cite")
		}
		if prev, ok := names[n]; ok {
			return "", fail(line, fmt.Sprintf("%s %q", kind, n), "the name is taken by the rule at line %d", prev)
		}
		names[n] = line
		return fmt.Sprintf("%s %q (line %d)", kind, n, line), nil
	}
	for _, r := range f.Exclusive {
		id, err := named("exclusive", nameOf(r), lineOf(r))
		if err != nil {
			return nil, err
		}
		er := &exclusiveRule{Exclusive: r, id: id}
		if er.when, err = r.When.compile(); err != nil {
			return nil, fail(r.line, id, "when: %v", err)
		}
		if r.Resource == "" {
			return nil, fail(r.line, id, "no resource: name what is taken, such as site:{site} or account:{arg.email}")
		}
		if er.resource, err = parseTemplate(r.Resource); err != nil {
			return nil, fail(r.line, id, "resource: %v", err)
		}
		s.exclusive = append(s.exclusive, er)
	}
	for _, r := range f.Once {
		id, err := named("once", nameOf(r), lineOf(r))
		if err != nil {
			return nil, err
		}
		or := &onceRule{OnceRule: r, id: id}
		if or.when, err = r.When.compile(); err != nil {
			return nil, fail(r.line, id, "when: %v", err)
		}
		k := r.Key
		if k == "" {
			k = DefaultOnceKey
		}
		if or.key, err = parseTemplate(k); err != nil {
			return nil, fail(r.line, id, "key: %v", err)
		}
		s.once = append(s.once, or)
	}
	for _, r := range f.Require {
		id, err := named("require", nameOf(r), lineOf(r))
		if err != nil {
			return nil, err
		}
		rr := &requireRule{Require: r, id: id, at: patterns(r.At)}
		if rr.when, err = r.When.compile(); err != nil {
			return nil, fail(r.line, id, "when: %v", err)
		}
		if err := checkURLs(r.At); err != nil {
			return nil, fail(r.line, id, "at: %v", err)
		}
		if len(r.At) == 0 && !r.InLastSnapshot {
			return nil, fail(r.line, id, "requires nothing: give at (URL patterns) or inLastSnapshot: true")
		}
		s.require = append(s.require, rr)
	}
	s.index()
	return s, nil
}

func lineOf[T interface {
	*AgentRule | *Exclusive | *OnceRule | *Require
}](r T) int {
	switch r := any(r).(type) {
	case *AgentRule:
		if r != nil {
			return r.line
		}
	case *Exclusive:
		if r != nil {
			return r.line
		}
	case *OnceRule:
		if r != nil {
			return r.line
		}
	case *Require:
		if r != nil {
			return r.line
		}
	}
	return 0
}

func nameOf[T interface {
	*Exclusive | *OnceRule | *Require
}](r T) string {
	switch r := any(r).(type) {
	case *Exclusive:
		if r != nil {
			return r.Name
		}
	case *OnceRule:
		if r != nil {
			return r.Name
		}
	case *Require:
		if r != nil {
			return r.Name
		}
	}
	return ""
}

// spec compiles a Rate; nil for none.
func (r *Rate) spec() (*bucketSpec, error) {
	if r == nil {
		return nil, nil
	}
	switch {
	case r.PerSecond < 0 || r.PerMinute < 0 || r.Burst < 0:
		return nil, fmt.Errorf("perSecond, perMinute and burst must not be negative")
	case (r.PerSecond > 0) == (r.PerMinute > 0):
		return nil, fmt.Errorf("give one of perSecond and perMinute")
	}
	b := &bucketSpec{every: rate.Limit(r.PerSecond), burst: r.Burst, wait: time.Duration(r.Wait), per: "s"}
	n := r.PerSecond
	if r.PerMinute > 0 {
		b.every, b.per, n = rate.Limit(r.PerMinute/60), "min", r.PerMinute
	}
	if b.burst == 0 {
		b.burst = max(1, int(n))
	}
	return b, nil
}

func (m *Match) compile() (*matcher, error) {
	if err := checkTools(m.Tools); err != nil {
		return nil, fmt.Errorf("tools: %v", err)
	}
	if err := checkURLs(m.URL); err != nil {
		return nil, fmt.Errorf("url: %v", err)
	}
	c := &matcher{agents: m.Agents, tools: newToolSet(m.Tools), urls: patterns(m.URL)}
	if m.Element != "" {
		f, err := namePattern(m.Element)
		if err != nil {
			return nil, fmt.Errorf("element: %v", err)
		}
		c.element = f
	}
	return c, nil
}

// namePattern reads /regexp/, /regexp/i or a glob.
func namePattern(p string) (func(string) bool, error) {
	if len(p) >= 2 && p[0] == '/' {
		body, flags := p[1:], ""
		if i := strings.LastIndexByte(body, '/'); i >= 0 {
			body, flags = body[:i], body[i+1:]
		} else {
			return nil, fmt.Errorf("%q: a regexp ends with / (or /i to ignore case)", p)
		}
		if flags != "" && flags != "i" {
			return nil, fmt.Errorf("%q: the only flag is i", p)
		}
		if flags == "i" {
			body = "(?i)" + body
		}
		re, err := regexp.Compile(body)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", p, err)
		}
		return re.MatchString, nil
	}
	return func(s string) bool { return glob(p, s) }, nil
}

// match reports whether the call is one the matcher is about.
func (m *matcher) match(c *Call) bool {
	if len(m.agents) > 0 && !anyGlob(m.agents, c.Agent) {
		return false
	}
	if !m.tools.has(c) {
		return false
	}
	if len(m.urls) > 0 && !anyURL(m.urls, c.parsedURL()) {
		return false
	}
	if m.element != nil && !c.anyElement(m.element) {
		return false
	}
	return true
}

func anyGlob(patterns []string, s string) bool {
	for _, p := range patterns {
		if glob(p, s) {
			return true
		}
	}
	return false
}

// patterns reads URL patterns once.
func patterns(ps []string) []policy.Pattern {
	var out []policy.Pattern
	for _, p := range ps {
		out = append(out, policy.CompilePattern(p))
	}
	return out
}

func anyURL(patterns []policy.Pattern, u policy.URL) bool {
	for _, p := range patterns {
		if u.Match(p) {
			return true
		}
	}
	return false
}

// glob matches s against pattern, where * is any run of characters.
func glob(pattern, s string) bool { return policy.Glob(pattern, s) }

// template is a key or resource template: literal text and {variables}.
type template []string // even indexes literal, odd variables

// templateVars are the variables a template may name, besides arg.NAME
// and query.NAME.
var templateVars = map[string]string{
	"agent": "the agent's name", "tool": "the tool", "page": "the page's id", "document": "the page's document number",
	"uid": "the element's uid", "element": "the element's accessible name", "site": "the URL's registrable domain",
	"origin": "the URL's origin", "host": "the URL's host", "url": "the URL",
}

func parseTemplate(s string) (template, error) {
	var t template
	for {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			return append(t, s), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("%q: a { without its }", s)
		}
		v := s[i+1 : i+j]
		if _, ok := templateVars[v]; !ok && !strings.HasPrefix(v, "arg.") && !strings.HasPrefix(v, "query.") {
			return nil, fmt.Errorf("unknown variable {%s}; want one of agent, tool, page, document, uid, element, site, origin, host, url, arg.NAME, query.NAME", v)
		}
		t = append(t, s[:i], v)
		s = s[i+j+1:]
	}
}

// expand fills the template in for the call.
func (t template) expand(c *Call) string {
	var b strings.Builder
	for i, part := range t {
		if i%2 == 0 {
			b.WriteString(part)
			continue
		}
		b.WriteString(c.value(part))
	}
	return b.String()
}

// value is a template variable's value for the call.
func (c *Call) value(v string) string {
	switch v {
	case "agent":
		return c.Agent
	case "tool":
		return c.Tool
	case "page":
		return strconv.Itoa(c.Page)
	case "document":
		return strconv.Itoa(c.Document)
	case "uid":
		if len(c.Elements) > 0 {
			return c.Elements[0].UID
		}
		return ""
	case "element":
		if len(c.Elements) > 0 {
			return c.Elements[0].Name
		}
		return ""
	case "url":
		return c.URL
	case "site":
		return c.site()
	}
	u, err := url.Parse(c.URL)
	switch {
	case v == "origin" && err == nil && u.Host != "":
		return u.Scheme + "://" + u.Host
	case v == "host" && err == nil:
		return u.Hostname()
	case strings.HasPrefix(v, "query.") && err == nil:
		return u.Query().Get(v[len("query."):])
	case strings.HasPrefix(v, "arg."):
		if a, ok := c.Args[v[len("arg."):]]; ok {
			return fmt.Sprint(a)
		}
	}
	return ""
}

// site is Site(c.URL), from the URL as read once.
func (c *Call) site() string {
	h := c.parsedURL().Host()
	if h == "" || strings.HasPrefix(h, "[") || net.ParseIP(h) != nil {
		return strings.Trim(h, "[]")
	}
	if s, err := publicsuffix.EffectiveTLDPlusOne(h); err == nil {
		return s
	}
	return h
}

// Site is the registrable domain of rawURL's host (shop.example.co.uk for
// https://www.shop.example.co.uk/), its host for an IP address or a name
// without a public suffix (localhost), "" for a URL without a host.
func Site(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	h := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if h == "" || net.ParseIP(h) != nil {
		return h
	}
	if s, err := publicsuffix.EffectiveTLDPlusOne(h); err == nil {
		return s
	}
	return h
}
