package rules

// Records says whether --record keeps the sessions of the agent of a name:
// false when the first agent entry that matches it says record: false.
// It decides nothing of a call.
func (s *Set) Records(agent string) bool {
	r := s.agentRule(agent)
	return r == nil || r.Record == nil || *r.Record
}
