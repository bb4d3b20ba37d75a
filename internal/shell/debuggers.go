package shell

import "strings"

// Debuggers and tracers, which run the program they trace (gdb also
// shell text).
var debugRunners = map[string]runner{
	"strace":   plain("abeEIOoPpsSuX", []string{"output", "expr", "signal", "trace", "attach", "user", "env", "string-limit"}),
	"ltrace":   plain("aAeEFlnopsuwxXD", []string{"output", "library"}),
	"valgrind": plain("", nil),
	"gdb":      runGdb,
}

// runGdb: gdb --args PROG ARGS runs PROG; -ex 'shell CMD' runs shell text.
func runGdb(w *wrapCall) wrapped {
	out := wrapped{}
	args := w.args
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Text()
		if !ok {
			continue
		}
		switch {
		case s == "--args" || s == "-args":
			out.argv = args[i+1:]
			return out
		case s == "-ex" || s == "--ex" || s == "-eval-command" || s == "--eval-command" || s == "-iex" || s == "--init-eval-command":
			if i+1 < len(args) {
				i++
				if t, ok := gdbShell(args[i]); ok {
					out.texts = append(out.texts, runText{text: t})
				}
			}
		case strings.HasPrefix(s, "--eval-command=") || strings.HasPrefix(s, "-eval-command="):
			_, v, _ := strings.Cut(s, "=")
			if t, ok := gdbShell(Lit(v)); ok {
				out.texts = append(out.texts, runText{text: t})
			}
		}
	}
	return out
}

func gdbShell(a Arg) (Arg, bool) {
	for _, p := range []string{"shell ", "!", "pipe "} {
		if t, ok := a.CutPrefix(p); ok {
			return t, true
		}
	}
	if !a.IsKnown() {
		return a, true
	}
	return Arg{}, false
}
