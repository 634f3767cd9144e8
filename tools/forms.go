package tools

// formTools lists the tools of this group. (Being written.)
func (s *Server) formTools() []tool { return nil }
