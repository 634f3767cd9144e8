package tools

// memoryTools lists the tools of this group. (Being written.)
func (s *Server) memoryTools() []tool { return nil }
