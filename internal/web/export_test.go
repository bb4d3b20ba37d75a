package web

import "time"

// SetPollForTest changes how often s's /api/events polls; call it before
// s serves.
func SetPollForTest(s *Server, d time.Duration) { s.pollEvery = d }

// SetEventGapForTest changes how far apart s's /api/events messages are
// at least; call it before s serves.
func SetEventGapForTest(s *Server, d time.Duration) { s.eventGap = d }
