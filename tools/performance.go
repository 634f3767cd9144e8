package tools

// performanceTools lists the tools of this group. (Being written.)
func (s *Server) performanceTools() []tool { return nil }
