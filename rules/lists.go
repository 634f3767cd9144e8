package rules

// Lists reports whether the agent's entry (the first of agents whose glob
// matches it) lets it call tool by name: its tools, when given, take the
// tool in, and its deny does not name it. It does not ask the rest of a
// call (its URL, its files, rates): tools/list shows an agent what it may
// call, and Decide still decides each call. An agent no entry matches may
// call any tool.
func (s *Set) Lists(agent, tool string) bool {
	r := s.agentRule(agent)
	if r == nil {
		return true
	}
	c := &Call{Agent: agent, Tool: tool}
	if r.deny != nil && r.deny.tools[tool] {
		return false
	}
	return r.allow.has(c)
}
