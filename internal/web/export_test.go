package web

import "time"

// SetPollForTest changes how often s's /api/events polls; call it before
// s serves.
func SetPollForTest(s *Server, d time.Duration) { s.pollEvery = d }
