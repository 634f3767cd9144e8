package tools

// consoleTools lists the tools of this group. (Being written.)
func (s *Server) consoleTools() []tool { return nil }
