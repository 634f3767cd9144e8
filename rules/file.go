// Package rules is pagemux's interlock: deterministic rules, read from a
// file, that decide before each tool call runs whether the calling agent may
// make it (tools, URLs, pages, tasks, rates), which exclusive resources it
// takes beyond its page, whether it is an action that must not happen twice,
// and what must hold before it acts. A decision is made in memory, in
// microseconds, with no model in the path, and says which rule decided and
// why.
//
// The package knows nothing of Chrome, MCP or locks: a call is the plain
// facts of Call, a decision is a Decision; the tools package asks, takes the
// resources and keeps the once-only records (Once).
package rules

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pagemux/pagemux/policy"
)

// File is a rules file as written: YAML, or JSON, which is YAML too. Its
// JSON Schema is schema.json.
type File struct {
	// Agents are what each agent may do: the first entry whose Agent
	// pattern matches a caller's name applies to it; a caller no entry
	// matches may do anything the server's flags allow.
	Agents []*AgentRule `yaml:"agents"`
	// Exclusive are resources only one call (or one agent, for a lease)
	// may hold at a time.
	Exclusive []*Exclusive `yaml:"exclusive"`
	// Once are actions that must not happen twice.
	Once []*OnceRule `yaml:"once"`
	// Require are conditions an action needs before it runs.
	Require []*Require `yaml:"require"`
	// Holds bound what an agent holds across its calls.
	Holds Holds `yaml:"holds"`
}

// AgentRule is what the agents of a name may do.
type AgentRule struct {
	// Agent is a glob (* for any run of characters) on the agent's name:
	// its token's name over HTTP, else the agent name it gave, else its
	// MCP client's name on stdio.
	Agent string `yaml:"agent"`
	// Tools, when not empty, are the only tools the agent may call: names
	// or groups (Groups).
	Tools []string `yaml:"tools"`
	// Deny are tools or groups the agent may not call, even when Tools
	// names them.
	Deny []string `yaml:"deny"`
	// URLs, when not empty, are the URL patterns (policy.PatternSyntax)
	// the agent's calls may act at, on top of the server's URL policy: a
	// navigation elsewhere is refused, and so is a call on a page that is
	// elsewhere.
	URLs []string `yaml:"urls"`
	// MaxPages bounds the pages the agent may have open; 0: no bound.
	MaxPages int `yaml:"maxPages"`
	// MaxTasks bounds the MCP tasks the agent may run at once; 0: the
	// server's bound.
	MaxTasks int `yaml:"maxTasks"`
	// Rate bounds the agent's calls.
	Rate *Rate `yaml:"rate"`
	// Navigations bounds the agent's navigations to each site.
	Navigations *Rate `yaml:"navigations"`
	// Record, set false, keeps the agent's sessions out of --record's
	// records (record.go); unset or true, they are recorded.
	Record *bool `yaml:"record"`
	line   int
}

// Rate is a token bucket: PerSecond or PerMinute tokens come back, Burst
// at most are kept (default: one second's or minute's worth, at least 1).
// A call that finds the bucket empty waits for its token when that comes
// within Wait, and is refused with the time to retry after otherwise.
type Rate struct {
	PerSecond float64  `yaml:"perSecond"`
	PerMinute float64  `yaml:"perMinute"`
	Burst     int      `yaml:"burst"`
	Wait      Duration `yaml:"wait"`
}

// Match says which calls a rule is about; every part given must match.
type Match struct {
	// Agents are globs on the agent's name.
	Agents []string `yaml:"agents"`
	// Tools are tool names or groups.
	Tools []string `yaml:"tools"`
	// URL are URL patterns of where the call acts: the URL a navigation
	// goes to, else the URL of the page the call acts on.
	URL []string `yaml:"url"`
	// Element is a pattern of the accessible name of the element the call
	// acts on (by uid, as the page's last snapshot showed it): /regexp/
	// (/regexp/i ignores case), else a glob.
	Element string `yaml:"element"`
}

// Exclusive is a resource only one holder may have at a time.
type Exclusive struct {
	Name string `yaml:"name"`
	When Match  `yaml:"when"`
	// Resource names what is taken, a template (Template): site:{site},
	// origin:{origin}, page:{page}, account:{arg.email} …
	Resource string `yaml:"resource"`
	// Lease, when set, keeps the resource the agent's between its calls
	// until it is idle that long, leaves what the resource names (another
	// site, another origin) or leaves. Unset: held for each call alone.
	Lease Duration `yaml:"lease"`
	// Timeout bounds, with Lease, the wait for another agent's lease to
	// end; unset: the server's lock wait. A resource held for a call alone
	// is waited for with the call's page lock, within the lock wait.
	Timeout Duration `yaml:"timeout"`
	line    int
}

// OnceRule marks actions that must not happen twice.
type OnceRule struct {
	Name string `yaml:"name"`
	When Match  `yaml:"when"`
	// Key is the template of what "the same action" is (Template);
	// default DefaultOnceKey: the same tool on the same element of the
	// same document of the same page.
	Key string `yaml:"key"`
	// TTL is how long the record of an action lasts; default
	// DefaultOnceTTL.
	TTL  Duration `yaml:"ttl"`
	line int
}

// Require is a condition an action needs before it runs.
type Require struct {
	Name string `yaml:"name"`
	When Match  `yaml:"when"`
	// At are URL patterns the page must be at.
	At []string `yaml:"at"`
	// InLastSnapshot requires the element the call names by uid to be in
	// the agent's own last snapshot of the page's current document: no
	// acting blind on a uid of another document or another agent's
	// snapshot.
	InLastSnapshot bool `yaml:"inLastSnapshot"`
	line           int
}

// Holds bound what an agent holds across calls: past its bound pagemux
// ends it, keeps its result in the agent's workspace and says so in the
// agent's next answer. Zero: the server's default.
type Holds struct {
	Trace      Duration `yaml:"trace"`
	Screencast Duration `yaml:"screencast"`
}

// Defaults of a once-only rule.
const (
	DefaultOnceKey = "{tool} {page} {document} {uid}"
	DefaultOnceTTL = 10 * time.Minute
)

// Duration is a time.Duration written as Go writes one: 90s, 5m, 1h30m.
type Duration time.Duration

// UnmarshalYAML reads a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: %q is not a duration; write one as 90s, 5m or 1h30m", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// Error is a rules file's fault: where it is and what to do.
type Error struct {
	File string
	Line int
	Rule string // "agents[2]", "once \"place-order\"", "" for the file
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Rule != "" {
		b.WriteString(": " + e.Rule)
	}
	return b.String() + ": " + e.Msg
}

// Load reads and checks the rules file at path.
func Load(path string) (*Set, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	return Parse(path, b)
}

// Parse reads and checks a rules file's bytes; name is what errors call it.
// A file that is empty, or only comments, has no rules.
func Parse(name string, b []byte) (*Set, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(name, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, yamlError(name, err)
	}
	setLines(&doc, &f)
	return compile(name, &f)
}

// yamlError turns the YAML library's error into an Error with its line.
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

func yamlError(name string, err error) error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:\n  ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		fmt.Sscan(m[1], &line)
		msg = msg[len(m[0]):]
	}
	if strings.Contains(msg, "not found in type") {
		field, _, _ := strings.Cut(strings.TrimPrefix(msg, "field "), " ")
		msg = fmt.Sprintf("unknown field %q; see schema.json, or pagemux rules --help, for the fields a rule has", field)
	}
	return &Error{File: name, Line: line, Msg: msg}
}

// setLines records the line of each rule, from the document's node tree.
func setLines(doc *yaml.Node, f *File) {
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return
	}
	m := doc.Content[0].Content
	for i := 0; i+1 < len(m); i += 2 {
		items := m[i+1].Content
		at := func(j int) int {
			if j < len(items) {
				return items[j].Line
			}
			return m[i].Line
		}
		switch m[i].Value {
		case "agents":
			setEach(f.Agents, func(r *AgentRule, j int) { r.line = at(j) })
		case "exclusive":
			setEach(f.Exclusive, func(r *Exclusive, j int) { r.line = at(j) })
		case "once":
			setEach(f.Once, func(r *OnceRule, j int) { r.line = at(j) })
		case "require":
			setEach(f.Require, func(r *Require, j int) { r.line = at(j) })
		}
	}
}

// setEach calls set on each rule of rs. A null entry (a "-" with nothing
// after it, as a half-saved edit has) becomes an empty rule first, which
// compile then refuses with its line, instead of a nil that would panic
// the server's reload.
func setEach[T any](rs []*T, set func(*T, int)) {
	for j := range rs {
		if rs[j] == nil {
			rs[j] = new(T)
		}
		set(rs[j], j)
	}
}

// checkTools reports the first name in names that is neither a tool nor a
// group.
func checkTools(names []string) error {
	for _, n := range names {
		if _, ok := Groups[n]; ok || slices.Contains(AllTools, n) {
			continue
		}
		return fmt.Errorf("%q is neither a tool nor a group; groups: %s", n, strings.Join(GroupNames(), ", "))
	}
	return nil
}

// checkURLs reports the first pattern that is empty.
func checkURLs(patterns []string) error {
	for _, p := range patterns {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("an empty URL pattern: want %s", policy.PatternSyntax)
		}
	}
	return nil
}
