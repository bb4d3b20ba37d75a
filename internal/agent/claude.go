package agent

import "time"

// claudeAdapter runs Claude Code (shared/reference/real-agents.md §3).
type claudeAdapter struct{}

func init() { Register(claudeAdapter{}) }

func (claudeAdapter) Kind() string { return "claude" }

// Command starts Claude in its "default" (manual) permission mode unless
// the user chose a mode with ST_CLAUDE_PERMISSION_MODE: 2.1.332 defaults
// to auto mode, whose server-side check cannot work behind a gateway and
// stops the first tool call with a dialog.
func (claudeAdapter) Command(o LaunchOptions) []string {
	prog := o.Program
	if prog == "" {
		prog = "claude"
	}
	argv := []string{prog}
	mode := o.PermissionMode
	if mode == "" {
		mode = "default"
	}
	argv = append(argv, "--permission-mode", mode)
	if ValidSession("claude", o.ResumeSession) {
		// One word: an id is never read as an option of its own.
		argv = append(argv, "--resume="+o.ResumeSession)
	}
	return argv
}

func (claudeAdapter) Recognize(capture string) View { return recognizeClaudeLike(capture) }

// EnterDelay: Claude drops an Enter that follows a long line typed the
// moment its box appears (5 of 8 tries at once, 0 of 6 with 300 ms).
func (claudeAdapter) EnterDelay() time.Duration { return 300 * time.Millisecond }

func (claudeAdapter) MapEvent(name string, payload []byte) (Event, error) {
	return mapClaudeLikeEvent(name, payload)
}
