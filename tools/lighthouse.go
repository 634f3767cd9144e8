package tools

// lighthouseTools lists the tools of this group. (Being written.)
func (s *Server) lighthouseTools() []tool { return nil }
