package shell

import (
	"slices"
	"strings"
)

// File tools that run a command for files or lines: find -exec, fd -x,
// xargs, parallel, and the watchers that run one when files change.
var fileRunners = map[string]runner{
	"xargs": runXargs,
	"find":  runFind,
	"fd":    runFd, "fdfind": runFd,
	"parallel":  runParallel,
	"entr":      runEntr,
	"watchexec": runWatchexec,
}

// runXargs: the command (echo by default) with arguments read from
// standard input: known when the input is, else a hole whose From are
// the commands that print it.
func runXargs(w *wrapCall) wrapped {
	var replace *string
	nul, delim := false, ""
	// -i and --replace take their value only attached (-i[R],
	// --replace[=R]; {} without one): the next word is the command.
	rest := getopt(xargsOptionalI(w.args), "adEILnPs", []string{"arg-file", "delimiter", "eof", "max-lines", "max-args",
		"max-procs", "max-chars", "process-slot-var"}, func(o string, v Arg) {
		s, _ := v.Text()
		switch o {
		case "-I":
			replace = &s
		case "--replace":
			r := "{}"
			if s != "" {
				r = s
			}
			replace = &r
		case "-0", "--null":
			nul = true
		case "-d", "--delimiter":
			delim = s
		case "-a", "--arg-file":
			// Arguments from a file st does not read.
			w.c = w.c.withStdin(HoleArg(&Hole{Kind: FromOutput, Src: "<" + v.String()}))
		}
	})
	if len(rest) == 0 {
		rest = []Arg{Lit("echo")}
	}
	var items []Arg
	if text, ok := w.c.stdin.Known(); ok {
		var parts []string
		switch {
		case nul:
			parts = strings.Split(text, "\x00")
		case delim != "":
			parts = strings.Split(text, delim[:1])
		case replace != nil:
			parts = strings.Split(text, "\n")
		default:
			parts = xargsSplit(text)
		}
		for _, p := range parts {
			if replace != nil {
				p = strings.TrimLeft(p, " \t")
			}
			if p != "" {
				items = append(items, Lit(p))
			}
		}
	} else {
		h := &Hole{Kind: FromOutput, Src: "(xargs input)", From: holesFrom(w.c.stdin)}
		a := HoleArg(h)
		a.Split = replace == nil
		items = []Arg{a}
	}
	if replace == nil {
		return wrapped{argv: append(append([]Arg(nil), rest...), items...)}
	}
	out := wrapped{}
	if len(items) > maxLoopItems {
		items = []Arg{HoleArg(&Hole{Kind: FromOutput, Src: "(xargs input)", From: holesFrom(w.c.stdin)})}
	}
	for i, it := range items {
		var argv []Arg
		for _, a := range rest {
			argv = append(argv, replaceIn(a, *replace, it))
		}
		if i == 0 {
			out.argv = argv
		} else {
			out.more = append(out.more, argv)
		}
	}
	return out
}

// xargsOptionalI spells xargs -i[R] as -I R ({} without R), since
// getopt knows no option whose value is only attached.
func xargsOptionalI(args []Arg) []Arg {
	out := make([]Arg, 0, len(args)+1)
	for i, a := range args {
		s, ok := a.Text()
		if !ok || s == "--" || !strings.HasPrefix(s, "-") || s == "-" {
			return append(out, args[i:]...)
		}
		if r, isI := strings.CutPrefix(s, "-i"); isI {
			if r == "" {
				r = "{}"
			}
			out = append(out, Lit("-I"), Lit(r))
			continue
		}
		out = append(out, a)
	}
	return out
}

// xargsSplit splits xargs input as xargs does by default: blanks, with
// quotes and backslashes.
func xargsSplit(s string) []string {
	var out []string
	var b strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				b.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
			in = true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				out = append(out, b.String())
				b.Reset()
				in = false
			}
		default:
			b.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, b.String())
	}
	return out
}

// replaceIn puts it where a holds rep.
func replaceIn(a Arg, rep string, it Arg) Arg {
	if rep == "" {
		return a
	}
	var parts []Arg
	changed := false
	for _, p := range a.pieces {
		if p.hole != nil {
			parts = append(parts, HoleArg(p.hole))
			continue
		}
		segs := strings.Split(p.lit, rep)
		for i, s := range segs {
			if i > 0 {
				parts = append(parts, it)
				changed = true
			}
			parts = append(parts, Lit(s))
		}
	}
	if !changed {
		return a
	}
	out := Concat(parts...)
	out.Split, out.Glob = a.Split, a.Glob
	return out
}

// runFind: the commands of -exec, -execdir, -ok and -okdir, with {} a
// path found under the folders searched.
func runFind(w *wrapCall) wrapped {
	args := w.args
	i := 0
	// Options before the paths.
	for i < len(args) {
		s, ok := args[i].Text()
		if !ok || !(s == "-H" || s == "-L" || s == "-P" || strings.HasPrefix(s, "-O") || s == "-D") {
			break
		}
		if s == "-D" {
			i++
		}
		i++
	}
	var roots []Arg
	for i < len(args) {
		s, ok := args[i].Text()
		if ok && (strings.HasPrefix(s, "-") || s == "(" || s == "!") {
			break
		}
		roots = append(roots, args[i])
		i++
	}
	if len(roots) == 0 {
		roots = []Arg{Lit(".")}
	}
	found := &Hole{Kind: FromFound, Src: "{}", Under: roots}
	out := wrapped{}
	for ; i < len(args); i++ {
		s, _ := args[i].Text()
		switch s {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) {
				t, _ := args[j].Text()
				if t == ";" || (t == "+" && j > i+1) {
					break
				}
				j++
			}
			var argv []Arg
			for _, a := range args[i+1 : min(j, len(args))] {
				argv = append(argv, replaceIn(a, "{}", HoleArg(found)))
			}
			if len(argv) > 0 {
				out.more = append(out.more, argv)
			}
			i = j
		}
	}
	return out
}

// runFd: fd -x/-X runs a command for the files found.
func runFd(w *wrapCall) wrapped {
	var roots []Arg
	out := wrapped{}
	for i := 0; i < len(w.args); i++ {
		s, _ := w.args[i].Text()
		if s == "-x" || s == "--exec" || s == "-X" || s == "--exec-batch" {
			j := i + 1
			for j < len(w.args) && w.args[j].String() != ";" {
				j++
			}
			found := &Hole{Kind: FromFound, Src: "{}", Under: append(roots, Lit("."))}
			var argv []Arg
			for _, a := range w.args[i+1 : j] {
				for _, ph := range []string{"{//}", "{/.}", "{/}", "{.}", "{}"} {
					a = replaceIn(a, ph, HoleArg(found))
				}
				argv = append(argv, a)
			}
			if len(argv) > 0 {
				out.more = append(out.more, argv)
			}
			i = j
			continue
		}
		if !strings.HasPrefix(s, "-") && i > 0 {
			roots = append(roots, w.args[i])
		}
	}
	return out
}

// runParallel: GNU parallel runs its command as shell text for each
// argument; with {} or no ::: st cannot tell the text.
func runParallel(w *wrapCall) wrapped {
	args := w.args
	i := 0
	withVal := []string{"-j", "--jobs", "-S", "--sshlogin", "--colsep", "-N", "-n", "-L", "-P", "--max-procs", "-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "--results", "--joblog", "--tmpdir", "--workdir", "--timeout", "--delay", "--halt"}
	for i < len(args) {
		s, ok := args[i].Text()
		if !ok || !strings.HasPrefix(s, "-") {
			break
		}
		if slices.Contains(withVal, s) {
			i++
		}
		i++
	}
	var cmdWords, items []Arg
	sep := false
	for ; i < len(args); i++ {
		s, _ := args[i].Text()
		if s == ":::" || s == "::::" || s == ":::+" || s == "::::+" {
			sep = true
			continue
		}
		if sep {
			items = append(items, args[i])
		} else {
			cmdWords = append(cmdWords, args[i])
		}
	}
	text := Join(cmdWords, " ")
	if t, ok := text.Text(); !ok || !sep || strings.Contains(t, "{") || len(cmdWords) == 0 {
		return wrapped{texts: []runText{{text: HoleArg(&Hole{Kind: FromPattern, Src: "parallel " + Join(args, " ").String()})}}}
	}
	var texts []runText
	for _, it := range items {
		texts = append(texts, runText{text: Concat(text, Lit(" "), quoteArg(it))})
		if len(texts) > maxLoopItems {
			break
		}
	}
	return wrapped{texts: texts}
}

func quoteArg(a Arg) Arg {
	if s, ok := a.Text(); ok {
		return Lit("'" + strings.ReplaceAll(s, "'", `'\''`) + "'")
	}
	return a
}

func runEntr(w *wrapCall) wrapped {
	shell := false
	rest := getopt(w.args, "", nil, func(o string, v Arg) {
		if o == "-s" {
			shell = true
		}
	})
	if shell && len(rest) > 0 {
		return wrapped{texts: []runText{{text: rest[0]}}}
	}
	return wrapped{argv: rest}
}

// runWatchexec: the command after -- (or its operands) is shell text.
func runWatchexec(w *wrapCall) wrapped {
	for i, a := range w.args {
		if s, _ := a.Text(); s == "--" {
			return wrapped{texts: []runText{{text: Join(w.args[i+1:], " ")}}}
		}
	}
	rest := getopt(w.args, "ewidfpsWn", []string{"exts", "watch", "ignore", "debounce", "filter", "shell", "signal",
		"stop-signal", "stop-timeout", "delay-run", "project-origin", "workdir", "env", "on-busy-update", "emit-events-to",
		"filter-file", "ignore-file", "fs-events", "poll", "color", "print-events", "log-file", "wrap-process"}, nil)
	if len(rest) == 0 {
		return wrapped{}
	}
	return wrapped{texts: []runText{{text: Join(rest, " ")}}}
}
