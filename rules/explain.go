package rules

import (
	"fmt"
	"strings"
)

// Summary says what a set holds, in a line.
func (s *Set) Summary() string {
	if s == nil {
		return "no rules"
	}
	return fmt.Sprintf("%s: %d agent rules, %d exclusive, %d once-only, %d requirements", s.Name,
		len(s.agents), len(s.exclusive), len(s.once), len(s.require))
}

// Explain says, for people, which rules apply to c and what would happen:
// what `pagemux rules explain` prints.
func (s *Set) Explain(c *Call) string {
	d := NewEngine(s).Explain(c)
	var b strings.Builder
	fmt.Fprintf(&b, "agent %s, tool %s", c.Agent, c.Tool)
	if c.URL != "" {
		fmt.Fprintf(&b, ", at %s", c.URL)
	}
	for _, el := range c.Elements {
		fmt.Fprintf(&b, ", element %q", el.Name)
	}
	b.WriteString("\n")
	if len(d.Applied) == 0 {
		b.WriteString("rules that apply: none\n")
	} else {
		b.WriteString("rules that apply:\n")
		for _, r := range d.Applied {
			fmt.Fprintf(&b, "  %s\n", r)
		}
	}
	switch d.Outcome {
	case Refused, RateLimited:
		fmt.Fprintf(&b, "outcome: %s by %s: %s\n", d.Outcome, d.Rule, d.Reason)
		return b.String()
	}
	b.WriteString("outcome: allowed\n")
	for _, r := range d.Resources {
		hold := "for the call"
		if r.Lease > 0 {
			hold = fmt.Sprintf("as a lease of the agent's, until it leaves or is idle %v", r.Lease)
		}
		fmt.Fprintf(&b, "  takes %s %s (%s); another holder makes it wait\n", r.Key, hold, r.Rule)
	}
	if d.Once != nil {
		fmt.Fprintf(&b, "  once only under key %q for %v (%s): a second call answers the first's result and does nothing\n", d.Once.Key, d.Once.TTL, d.Once.Rule)
	}
	return b.String()
}
