package tools

// networkTools lists the tools of this group. (Being written.)
func (s *Server) networkTools() []tool { return nil }
