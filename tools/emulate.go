package tools

// emulationTools lists the tools of this group. (Being written.)
func (s *Server) emulationTools() []tool { return nil }
