package shell

import (
	"slices"
	"strings"
)

// Build and package tools that run shell text: make's recipes, npx -c,
// hyperfine's commands.
var buildRunners = map[string]runner{
	"make": runMake, "gmake": runMake,
	"npx":       runNpx,
	"hyperfine": runHyperfine,
}

// runMake: a makefile st can read (from a process substitution or
// standard input): its recipe lines are shell text.
func runMake(w *wrapCall) wrapped {
	out := wrapped{}
	getopt(w.args, "fCIjlowW", []string{"file", "makefile", "directory", "include-dir", "jobs", "load-average",
		"old-file", "assume-old", "what-if", "new-file", "assume-new", "eval"}, func(o string, v Arg) {
		var text Arg
		switch o {
		case "-f", "--file", "--makefile":
			if s, _ := v.Text(); stdinPaths[s] || s == "-" {
				text = w.c.stdin
			} else if hs := v.Holes(); len(hs) == 1 && hs[0].Kind == FromProc {
				if hs[0].Out == nil {
					text = v
				} else {
					text = *hs[0].Out
				}
			} else {
				return
			}
		case "--eval":
			text = v
		default:
			return
		}
		t, ok := text.Text()
		if !ok {
			out.texts = append(out.texts, runText{text: text})
			return
		}
		for _, line := range strings.Split(t, "\n") {
			if r, ok := strings.CutPrefix(line, "\t"); ok {
				r = strings.TrimLeft(r, "@-+")
				out.texts = append(out.texts, runText{text: Lit(r)})
			}
		}
	})
	return out
}

// runNpx: npx -c TEXT runs shell text.
func runNpx(w *wrapCall) wrapped {
	out := wrapped{}
	getopt(w.args, "cp", []string{"call", "package"}, func(o string, v Arg) {
		if o == "-c" || o == "--call" {
			out.texts = append(out.texts, runText{text: v})
		}
	})
	return out
}

// runHyperfine: each command is shell text, and so are --prepare,
// --cleanup and --setup.
func runHyperfine(w *wrapCall) wrapped {
	var texts []runText
	rest := w.args
	for i := 0; i < len(rest); i++ {
		s, ok := rest[i].Text()
		switch {
		case ok && (s == "-p" || s == "--prepare" || s == "-c" || s == "--cleanup" || s == "-s" || s == "--setup" || s == "--conclude"):
			if i+1 < len(rest) {
				texts = append(texts, runText{text: rest[i+1]})
				i++
			}
		case ok && strings.HasPrefix(s, "-"):
			if !strings.Contains(s, "=") && slices.Contains([]string{"-w", "--warmup", "-m", "--min-runs", "-M", "--max-runs",
				"-r", "--runs", "-S", "--shell", "--style", "-n", "--command-name", "-L", "--parameter-list", "-P",
				"--parameter-scan", "-D", "--parameter-step-size", "-u", "--time-unit", "--export-asciidoc",
				"--export-csv", "--export-json", "--export-markdown", "--export-orgmode", "--output", "--input", "--sort", "-i"}, s) {
				i++
				if s == "-P" || s == "--parameter-scan" || s == "-L" || s == "--parameter-list" {
					i++
				}
			}
		default:
			texts = append(texts, runText{text: rest[i]})
		}
	}
	return wrapped{texts: texts}
}
