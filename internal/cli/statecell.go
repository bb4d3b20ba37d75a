package cli

import (
	"fmt"
	"time"

	"github.com/sophonz/st/internal/api"
)

// stateCell is a worker's state as listings print it: a paused worker
// says why and until when (issue 35: "paused (usage limit, resets
// 03:54)"), and who goes on after the reset.
func stateCell(w api.Worker) string {
	p := w.Pause
	if w.State != api.Paused || p == nil {
		return string(w.State)
	}
	at := p.Resets.Local().Format("15:04")
	if !p.Exact {
		at = "~" + at // the agent's screen, to the minute
	}
	switch {
	case p.By == "move" && p.MovedTo != "":
		return fmt.Sprintf("paused (%s, resets %s; its task moved to %s)", p.Reason, at, p.MovedTo)
	case p.By == "move":
		return fmt.Sprintf("paused (%s, resets %s; moving its task to %s)", p.Reason, at, p.MoveTo)
	case p.Typed:
		return fmt.Sprintf("paused (%s, resets %s; st typed continue)", p.Reason, at)
	case p.By == "agent" && !p.ItselfFrom.IsZero():
		return fmt.Sprintf("paused (%s, resets %s; %s goes on by itself %s-%s, st types continue at %s if not)", p.Reason, at, w.Agent,
			p.ItselfFrom.Local().Format(time.TimeOnly), p.ItselfBy.Local().Format(time.TimeOnly), p.GoesOnBy.Local().Format(time.TimeOnly))
	case p.By == "agent":
		return fmt.Sprintf("paused (%s, resets %s; %s goes on by itself, st types continue at %s if not)", p.Reason, at, w.Agent, p.GoesOnBy.Local().Format(time.TimeOnly))
	}
	return fmt.Sprintf("paused (%s, resets %s)", p.Reason, at)
}

// coordStateCell is the state of a coordinator paused at its agent's
// usage limit, in the words a worker's listing uses.
func coordStateCell(kind string, p *api.Pause) string {
	return stateCell(api.Worker{State: api.Paused, Agent: kind, Pause: p})
}
