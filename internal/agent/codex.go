package agent

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"time"
)

// codexAdapter runs the Codex CLI (shared/reference/real-agents.md §4).
type codexAdapter struct{}

func init() { Register(codexAdapter{}) }

func (codexAdapter) Kind() string { return "codex" }

// Command starts Codex with --no-daemon: with the shared background
// server, hooks carry the TMUX_PANE of whichever pane started it, and the
// sessions outlive their windows. Versions without the flag (0.150.0 has
// none; 0.160.1 has it) refuse to start with it, and have no background
// server either (measured on 0.150.0: no daemon process, hooks from its
// own pane), so they get none. NetworkAccess lifts the sandbox's block on
// sockets, for users who choose it (st never does on its own).
func (codexAdapter) Command(o LaunchOptions) []string {
	prog := o.Program
	if prog == "" {
		prog = "codex"
	}
	argv := []string{prog}
	resume := ValidSession("codex", o.ResumeSession)
	if resume {
		argv = append(argv, "resume")
	}
	if codexTakesNoDaemon(prog, o.Path) {
		argv = append(argv, "--no-daemon")
	}
	if o.NetworkAccess {
		argv = append(argv, "-c", "sandbox_workspace_write.network_access=true")
	}
	if resume {
		// After "--": an id is never read as an option.
		argv = append(argv, "--", o.ResumeSession)
	}
	return argv
}

// codexTakesNoDaemon asks the program (once per version of its file)
// whether it has --no-daemon. When it cannot be asked, the flag goes in, as
// every version st was tested on from 0.160.1 up takes it.
func codexTakesNoDaemon(prog, pathEnv string) bool {
	path, err := LookProgram("codex", prog, pathEnv)
	if err != nil {
		return true
	}
	p := ProbeProgram(context.Background(), "codex", path)
	return p.Version == "" || p.NoDaemon
}

// WantsEscapes: Codex draws its placeholder ("Ask Codex to do anything",
// or a rotating suggestion) dim in the composer; only the escapes tell it
// from text someone typed.
func (codexAdapter) WantsEscapes() bool { return true }

var (
	ansiRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\x1b\[[0-9;:?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]`)
	})
	// codexFooterRE is the model line under the composer ("gpt-5 high ·
	// /path"); it appears once the splash is over and Codex takes input.
	codexFooterRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s+\S.* · [/~]`) })
)

// The markers of Codex's screens that only a person may answer, as
// captured from 0.130.0 to 0.171.0 (testdata/screens/codex). Up to 0.15x
// the trust screen says "Welcome to Codex" too, like the sign-in screen,
// so trust is looked for first.
var (
	codexTrust = []string{"Trust this folder?", "Folder access", "Hooks need review",
		"Do you trust the contents of this directory?"}
	codexLogin  = []string{"Welcome to Codex", "Sign in with ChatGPT", "Sign in with Device Code", "Use an OpenAI API key"}
	codexPrompt = []string{"Would you like to run the following command?", "Would you like to make the following edits?",
		"Press enter to confirm or esc to cancel", "Would you like to",
		// request_user_input (plan mode): its footer, under the options.
		"enter to submit answer"}
)

// Recognize reads a capture-pane -e of Codex.
func (codexAdapter) Recognize(capture string) View {
	raw := strings.Split(strings.ReplaceAll(capture, "\r\n", "\n"), "\n")
	plain := make([]string, len(raw))
	for i, l := range raw {
		plain[i] = strings.TrimRight(ansiRE().ReplaceAllString(l, ""), " \t")
	}
	if s, ok := codexDialog(plain); ok {
		return View{Screen: s}
	}
	// The composer is the last line starting with "›" that is not an
	// option of a menu ("› 1. Yes").
	comp := -1
	for i := len(plain) - 1; i >= 0; i-- {
		if strings.HasPrefix(plain[i], "›") {
			comp = i
			break
		}
	}
	if comp < 0 {
		return View{Screen: ScreenUnknown}
	}
	box, end := codexBox(raw, plain, comp)
	for _, l := range plain[max(0, comp-4):] {
		if strings.Contains(l, "esc to interrupt") {
			return View{Screen: ScreenWorking, Box: box}
		}
	}
	ready := false
	for _, l := range plain[end:] {
		if codexFooterRE().MatchString(l) {
			ready = true
		}
	}
	if !ready {
		return View{Screen: ScreenUnknown, Box: box} // the splash: not taking input yet
	}
	if box != "" {
		return View{Screen: ScreenTyped, Box: box}
	}
	return View{Screen: ScreenReady}
}

// codexDialog is the dialog Codex draws over its composer, if any (trust,
// login, a question): looked for from the last transcript item ("•")
// down.
func codexDialog(plain []string) (Screen, bool) {
	has := func(lines []string, marks []string) bool {
		for _, l := range lines {
			for _, m := range marks {
				if strings.Contains(l, m) {
					return true
				}
			}
		}
		return false
	}
	last := 0
	for i := range plain {
		if strings.HasPrefix(plain[i], "• ") {
			last = i
		}
	}
	switch {
	case has(plain[last:], codexTrust):
		return ScreenTrust, true
	case has(plain[last:], codexLogin):
		return ScreenLogin, true
	case has(plain[last:], codexPrompt):
		return ScreenPrompt, true
	}
	return ScreenUnknown, false
}

// codexBox is the composer's text (at line comp): its first line after
// "› " and the lines up to the blank line above the footer; end is the
// line after it.
func codexBox(raw, plain []string, comp int) (box string, end int) {
	var text []string
	first := strings.TrimPrefix(strings.TrimPrefix(plain[comp], "›"), " ")
	if !isDimAfterPrompt(raw[comp]) {
		text = append(text, first)
	}
	end = comp + 1
	for ; end < len(plain) && plain[end] != ""; end++ {
		if codexFooterRE().MatchString(plain[end]) {
			break
		}
		text = append(text, strings.TrimSpace(plain[end]))
	}
	return strings.TrimSpace(strings.Join(text, "")), end
}

// isDimAfterPrompt reports whether the composer line's text is drawn dim
// (SGR 2): the placeholder, not typed text.
func isDimAfterPrompt(line string) bool {
	i := strings.Index(line, "›")
	if i < 0 {
		return false
	}
	rest := line[i+len("›"):]
	// Skip resets and spaces up to the first printable character, noting
	// whether a dim attribute was switched on on the way.
	dim := false
	for len(rest) > 0 {
		if loc := ansiRE().FindStringIndex(rest); loc != nil && loc[0] == 0 {
			seq := rest[:loc[1]]
			if strings.HasSuffix(seq, "m") {
				params := strings.Split(strings.TrimSuffix(strings.TrimPrefix(seq, "\x1b["), "m"), ";")
				for _, p := range params {
					if p == "2" {
						dim = true
					}
					if p == "0" || p == "22" || p == "" {
						dim = false
					}
				}
			}
			rest = rest[loc[1]:]
			continue
		}
		if rest[0] == ' ' {
			rest = rest[1:]
			continue
		}
		return dim
	}
	return true // nothing after the prompt: an empty composer
}

// EnterDelay: Codex takes an Enter within a paste burst as part of the
// paste (reference §4.4: 50 ms and more worked).
func (codexAdapter) EnterDelay() time.Duration { return 150 * time.Millisecond }

// MapEvent maps Codex's hooks, which use Claude's payloads, plus its
// Interrupt (Esc during a turn).
func (codexAdapter) MapEvent(name string, payload []byte) (Event, error) {
	ev, err := mapClaudeLikeEvent(name, payload)
	if err != nil {
		return ev, err
	}
	if name == "Interrupt" {
		ev.Kind = EvInterrupt
	}
	return ev, nil
}
