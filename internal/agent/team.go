package agent

// Claude Code's agent teams (CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1), as
// measured on 2.1.332 (docs/agent-teams.md): a lead calls its Agent tool
// with a name, and that spawns a teammate, in a tmux pane of its own
// (teammate mode tmux) or inside the lead's process (in-process). Three
// things tell st about a teammate:
//
//   - the lead's PostToolUse of that Agent call, whose tool_response says
//     "teammate_spawned" with the teammate's name, team and pane;
//   - TeammateIdle, fired after each of a teammate's turns with
//     teammate_name and team_name (from the teammate's own pane, or from
//     the lead's pane for an in-process teammate);
//   - a teammate's own command line (claude --agent-id NAME@TEAM
//     --agent-name NAME --team-name TEAM --parent-session-id LEAD ...),
//     which st hook reads from the process its hooks run under, since no
//     hook payload of a teammate says that it is one.
//
// Everything here comes from an agent's hook or process, so it is checked
// like any input: a name, team, pane or id that does not look as Claude
// makes them is dropped.

import (
	"encoding/json"
	"regexp"
	"sync"
)

// Teammate is one teammate of a Claude agent team, as a hook or a command
// line tells it. Fields that were not told are empty.
type Teammate struct {
	Name string `json:"name"`
	Team string `json:"team"`
	// Pane is its own tmux pane (%N); "" when it runs in its lead's
	// process, which InProcess then says.
	Pane      string `json:"pane,omitempty"`
	InProcess bool   `json:"in_process,omitempty"`
	// AgentID is the id an in-process teammate's hooks carry as agent_id
	// in its lead's pane ("aalpha-68e8d13170b687ef").
	AgentID string `json:"agent_id,omitempty"`
	Color   string `json:"color,omitempty"`
	// LeadSession is the lead's conversation id, from a teammate's own
	// command line (--parent-session-id).
	LeadSession string `json:"lead_session,omitempty"`
}

var (
	// memberRE is the pattern Claude's Agent tool gives a name.
	memberRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`) })
	// teamRE admits team names such as "session-0702c391".
	teamRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`) })
	// idRE admits agent ids ("alpha@session-0702c391",
	// "aalpha-68e8d13170b687ef") and conversation ids (UUIDs).
	idRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9@._-]{0,127}$`) })
	colorRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z]{1,20}$`) })
	typeRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}$`) })
	paneRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^%[0-9]{1,9}$`) })
)

// ValidMember reports whether name may be a teammate's name.
func ValidMember(name string) bool { return memberRE().MatchString(name) }

// ValidTeam reports whether name may be a team's name.
func ValidTeam(name string) bool { return teamRE().MatchString(name) }

// Valid reports whether every field of t looks as Claude writes it: what
// crosses st's socket is checked again there, since any program of the
// user may call it.
func (t *Teammate) Valid() bool {
	c := *t
	return c.clean() && c == *t
}

// ValidSubagent reports whether a subagent's (or an in-process
// teammate's) agent_id and agent_type look as Claude writes them
// ("a2cbef72153bff3a8", "general-purpose", "plugin:reviewer"); "" is
// fine for the type.
func ValidSubagent(id, typ string) bool {
	return idRE().MatchString(id) && (typ == "" || typeRE().MatchString(typ))
}

// clean drops what does not look as Claude writes it, and says whether
// a teammate is left (a valid name and team).
func (t *Teammate) clean() bool {
	if !ValidMember(t.Name) || !ValidTeam(t.Team) {
		return false
	}
	if !paneRE().MatchString(t.Pane) {
		t.Pane = ""
	}
	if !idRE().MatchString(t.AgentID) {
		t.AgentID = ""
	}
	if !idRE().MatchString(t.LeadSession) {
		t.LeadSession = ""
	}
	if !colorRE().MatchString(t.Color) {
		t.Color = ""
	}
	return true
}

// TeammateFromArgs reads a teammate's identity from the command line of
// its claude process, or returns nil when argv is not a teammate's (a
// lead, or any other Claude, has no --team-name).
func TeammateFromArgs(argv []string) *Teammate {
	t := &Teammate{}
	for i := 0; i+1 < len(argv); i++ {
		v := argv[i+1]
		switch argv[i] {
		case "--agent-name":
			t.Name = v
		case "--team-name":
			t.Team = v
		case "--agent-color":
			t.Color = v
		case "--parent-session-id":
			t.LeadSession = v
		case "--agent-id":
			t.AgentID = v
		default:
			continue
		}
		i++
	}
	if !t.clean() {
		return nil
	}
	return t
}

// spawnedTeammate reads the teammate that a lead's Agent call spawned from
// its PostToolUse payload, or returns nil for any other tool call (a
// subagent's answers "async_launched").
func spawnedTeammate(p map[string]json.RawMessage) *Teammate {
	if str(p, "tool_name") != "Agent" {
		return nil
	}
	var r map[string]json.RawMessage
	if json.Unmarshal(p["tool_response"], &r) != nil || str(r, "status") != "teammate_spawned" {
		return nil
	}
	t := &Teammate{Name: str(r, "name"), Team: str(r, "team_name"), Pane: str(r, "tmux_pane_id"),
		AgentID: str(r, "agent_id"), Color: str(r, "color")}
	// In-process teammates have "in-process" where a pane would be.
	t.InProcess = t.Pane == "in-process"
	if !t.clean() {
		return nil
	}
	return t
}

// messageTo is the teammate a SendMessage call went to, or "".
func messageTo(p map[string]json.RawMessage) string {
	if str(p, "tool_name") != "SendMessage" {
		return ""
	}
	var in map[string]json.RawMessage
	if json.Unmarshal(p["tool_input"], &in) != nil {
		return ""
	}
	if to := str(in, "to"); ValidMember(to) {
		return to
	}
	return ""
}

// backgroundTasks counts a Stop's background tasks: the teammates, which
// live on between the lead's turns, and the rest (subagents, shells),
// whose ends the turn still waits for.
func backgroundTasks(p map[string]json.RawMessage) (teammates, others int) {
	var tasks []map[string]json.RawMessage
	if json.Unmarshal(p["background_tasks"], &tasks) != nil {
		// Not a list of objects: count what is there as pending work.
		return 0, arrayLen(p, "background_tasks")
	}
	for _, t := range tasks {
		if str(t, "type") == "teammate" {
			teammates++
		} else {
			others++
		}
	}
	return teammates, others
}
