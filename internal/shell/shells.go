package shell

import "strings"

// The shells (their -c text, scripts and standard input), the builtins
// that run a command in this shell, multi-call binaries, and terminal
// programs that run a command in a session of their own.
var shellRunners = map[string]runner{
	"sh": runShell, "bash": runShell, "dash": runShell, "zsh": runShell, "ksh": runShell, "mksh": runShell,
	"ash": runShell, "yash": runShell, "posh": runShell, "rbash": runShell, "ksh93": runShell, "oksh": runShell,
	"loksh": runShell, "pdksh": runShell, "hush": runShell, "fish": runShell,
	"command": spec{noRun: []string{"-v", "-V"}, current: true, noFuncs: true}.run,
	"builtin": spec{current: true, noFuncs: true}.run,
	"exec":    spec{short: "a", current: true}.run,
	"busybox": runBusybox, "toybox": runBusybox,
	"script": runScript,
	"screen": runScreen,
	"dtach":  runDtach,
}

// Shells are the shells st reads -c text and scripts of.
var Shells = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "rbash", "ksh93", "oksh", "loksh", "pdksh", "hush", "fish"}

// runShell: sh -c TEXT [NAME ARGS...], sh FILE [ARGS...], and a shell
// reading its program from standard input.
func runShell(w *wrapCall) wrapped {
	args := w.args
	cFlag, sFlag := false, false
	var rc *Arg
	i := 0
	for i < len(args) {
		s, ok := args[i].Text()
		if !ok {
			if args[i].NotOption() {
				break // a path: the script
			}
			return wrapped{texts: []runText{{text: Join(args[i:], " ")}}}
		}
		if s == "--" || s == "-" {
			i++
			break
		}
		if len(s) < 2 || (s[0] != '-' && s[0] != '+') {
			break
		}
		i++
		if strings.HasPrefix(s, "--") {
			switch s {
			case "--rcfile", "--init-file":
				if i < len(args) {
					a := args[i]
					rc = &a
					i++
				}
			case "--command":
				cFlag = true
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			switch s[j] {
			case 'c':
				cFlag = true
			case 's':
				sFlag = true
			case 'o', 'O':
				i++
			}
		}
	}
	rest := args[min(i, len(args)):]
	out := wrapped{}
	if rc != nil {
		out.texts = append(out.texts, runText{file: rc})
	}
	switch {
	case cFlag:
		if len(rest) > 0 {
			out.texts = append(out.texts, runText{text: rest[0], args: rest[1:]})
		}
	case len(rest) > 0 && !sFlag:
		f := rest[0]
		out.texts = append(out.texts, runText{file: &f, args: rest})
	default:
		out.texts = append(out.texts, runText{text: w.c.stdin, args: rest})
	}
	return out
}

func runBusybox(w *wrapCall) wrapped {
	if len(w.args) == 0 || w.args[0].HasPrefix("-") {
		return wrapped{}
	}
	return wrapped{argv: w.args}
}

func runScript(w *wrapCall) wrapped {
	var text *Arg
	getopt(w.args, "cEoTBIOm", []string{"command", "echo", "output-limit", "log-timing", "log-io", "log-in", "log-out", "logging-format"}, func(o string, v Arg) {
		if o == "-c" || o == "--command" {
			t := v
			text = &t
		}
	})
	if text != nil {
		return wrapped{texts: []runText{{text: *text}}}
	}
	return wrapped{texts: []runText{{text: w.c.stdin}}}
}

// runScreen: screen -dm CMD runs a command; -X stuff TEXT types text
// into a window, where a shell may run it.
func runScreen(w *wrapCall) wrapped {
	args := w.args
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Text()
		if !ok {
			return wrapped{argv: args[i:]}
		}
		switch {
		case s == "-X":
			if i+2 < len(args) && args[i+1].String() == "stuff" {
				return wrapped{texts: []runText{{text: args[i+2]}}}
			}
			return wrapped{}
		case s == "-Logfile":
			i++
		case strings.HasPrefix(s, "-"):
			// A cluster (-dmS NAME): a letter that takes a value takes
			// the rest of the word, or the next word when it ends it.
			if j := strings.IndexAny(s[1:], "SceEhpsTt"); j >= 0 && j+2 == len(s) {
				i++
			}
		default:
			return wrapped{argv: args[i:]}
		}
	}
	return wrapped{}
}

func runDtach(w *wrapCall) wrapped {
	if len(w.args) < 2 {
		return wrapped{}
	}
	rest := getopt(w.args[2:], "erz", nil, nil)
	return wrapped{argv: rest}
}
