package agent

import "time"

// simAdapter drives st's own simulated agent (`st agent sim`, package
// agent/simagent). It draws Claude's screens and sends Claude's hook
// payloads, so it shares Claude's recognizer and event mapper: tests that
// pass against the sim exercise the same code paths as a real Claude.
type simAdapter struct{}

func init() { Register(simAdapter{}) }

func (simAdapter) Kind() string { return "sim" }

// Command runs the sim from the st binary itself, so a worker needs nothing
// installed besides st.
func (simAdapter) Command(o LaunchOptions) []string {
	argv := []string{o.STBin, "agent", "sim"}
	if ValidSession("sim", o.ResumeSession) {
		// (Its flag package takes the next word as the value, whatever
		// it starts with.)
		argv = append(argv, "--resume", o.ResumeSession)
	}
	return argv
}

func (simAdapter) Recognize(capture string) View { return recognizeClaudeLike(capture) }

// EnterDelay is above the 50 ms inside which the sim's
// ST_SIM_SWALLOW_ENTER knob drops an Enter, like a real agent's paste
// detection would.
func (simAdapter) EnterDelay() time.Duration { return 80 * time.Millisecond }

func (simAdapter) MapEvent(name string, payload []byte) (Event, error) {
	return mapClaudeLikeEvent(name, payload)
}
