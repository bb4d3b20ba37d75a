package shell

import "strings"

// Programs that run a command elsewhere or later: ssh (a shell on another
// machine, which may be this one), at and batch, crontab.
var laterRunners = map[string]runner{
	"ssh": runSsh,
	"at":  runAt, "batch": runAt,
	"crontab": runCrontab,
}

// runSsh: the remote command is shell text run by the other side's shell
// (which may be this machine's), without this shell's variables.
func runSsh(w *wrapCall) wrapped {
	noCmd, noStdin := false, false
	rest := getopt(w.args, "BbcDEeFIiJLlmOopQRSWw", nil, func(o string, v Arg) {
		switch o {
		case "-N", "-O", "-V", "-G", "-Q":
			noCmd = true
		case "-n", "-f":
			noStdin = true
		}
	})
	if noCmd || len(rest) == 0 {
		return wrapped{}
	}
	if !rest[0].IsKnown() && rest[0].Split {
		return wrapped{texts: []runText{{text: Join(rest, " "), remote: true}}, other: true}
	}
	cmd := rest[1:]
	if len(cmd) == 0 {
		if noStdin {
			return wrapped{}
		}
		return wrapped{texts: []runText{{text: w.c.stdin, remote: true}}, other: true}
	}
	return wrapped{texts: []runText{{text: Join(cmd, " "), remote: true}}, other: true}
}

// runAt: at and batch run their standard input (or -f FILE) later.
func runAt(w *wrapCall) wrapped {
	var file *Arg
	getopt(w.args, "fqtM", nil, func(o string, v Arg) {
		if o == "-f" {
			f := v
			file = &f
		}
	})
	if file != nil {
		return wrapped{texts: []runText{{file: file}}}
	}
	return wrapped{texts: []runText{{text: w.c.stdin}}}
}

// runCrontab: a crontab's lines are commands run later.
func runCrontab(w *wrapCall) wrapped {
	rest := getopt(w.args, "u", nil, nil)
	text := w.c.stdin
	if len(rest) > 0 {
		if s, _ := rest[0].Text(); s != "-" {
			return wrapped{texts: []runText{{file: &rest[0]}}}
		}
	}
	t, ok := text.Text()
	if !ok {
		return wrapped{texts: []runText{{text: text}}}
	}
	var out []runText
	for _, line := range strings.Split(t, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) > 0 && strings.Contains(f[0], "=") && !strings.ContainsAny(f[0], "*/") {
			continue // a variable
		}
		skip := 5
		if strings.HasPrefix(line, "@") {
			skip = 1
		}
		for i := 0; i < skip && line != ""; i++ {
			line = strings.TrimLeft(line, " \t")
			if j := strings.IndexAny(line, " \t"); j >= 0 {
				line = line[j:]
			} else {
				line = ""
			}
		}
		out = append(out, runText{text: Lit(strings.TrimSpace(line))})
	}
	return wrapped{texts: out}
}
