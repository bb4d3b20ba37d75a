package shell

import "strings"

// Programs that run a command as another user (or with other
// privileges): the command is read, and may run with another
// environment.
var userRunners = map[string]runner{
	"sudo": runSudo, "doas": runDoas, "su": runSu, "runuser": runSu,
	"pkexec": spec{long: []string{"user"}, other: true}.run,
	"setpriv": spec{long: []string{"reuid", "regid", "groups", "inh-caps", "ambient-caps", "bounding-set", "securebits",
		"pdeathsig", "selinux-label", "apparmor-profile", "landlock-access", "landlock-rule", "ptracer"},
		noRun: []string{"-d", "--dump", "-h", "--help"}, other: true}.run,
	"sg":    runSg,
	"capsh": runCapsh,
}

func runSudo(w *wrapCall) wrapped {
	out := wrapped{other: true, reset: true, set: map[string]Arg{}}
	shell, noRun := false, false
	rest := getopt(w.args, "aCcDgpRrTtUu", []string{"user", "group", "prompt", "close-from", "chdir", "role", "type",
		"command-timeout", "other-user", "chroot", "host", "login-class", "auth-type"}, func(o string, v Arg) {
		switch o {
		case "-E", "--preserve-env":
			out.reset = false
		case "-D", "--chdir":
			d := JoinDir(w.dirArg(), v)
			out.dir = &d
		case "-s", "--shell", "-i", "--login":
			shell = true
		case "-e", "--edit", "-l", "--list", "-v", "--validate", "-V", "--version", "-K", "--remove-timestamp", "-h", "--help":
			noRun = true
		}
		if strings.HasPrefix(o, "--preserve-env") {
			out.reset = false
		}
	})
	if noRun {
		return wrapped{}
	}
	rest = assignments(rest, out.set)
	if len(rest) == 0 && !shell {
		return wrapped{}
	}
	return defaultShell(w, out, rest)
}

func runDoas(w *wrapCall) wrapped {
	out := wrapped{other: true, reset: true}
	shell, noRun := false, false
	rest := getopt(w.args, "aCu", nil, func(o string, v Arg) {
		switch o {
		case "-s":
			shell = true
		case "-L", "-C":
			noRun = true
		}
	})
	if noRun || len(rest) == 0 && !shell {
		return wrapped{}
	}
	return defaultShell(w, out, rest)
}

// runSu: su and runuser. -c gives text for the user's shell; runuser -u
// USER CMD runs a command; else the shell reads standard input.
func runSu(w *wrapCall) wrapped {
	out := wrapped{other: true}
	var text *Arg
	user := false
	args := w.args
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Text()
		if !ok {
			out.argv = args[i:]
			return out
		}
		switch {
		case s == "-c" || s == "--command" || s == "--session-command":
			if i+1 < len(args) {
				t := args[i+1]
				text = &t
				i++
			}
		case strings.HasPrefix(s, "--command=") || strings.HasPrefix(s, "--session-command="):
			_, v, _ := strings.Cut(s, "=")
			t := Lit(v)
			text = &t
		case s == "-" || s == "-l" || s == "--login":
			out.clear = true
		case s == "-u" || s == "--user" || s == "-s" || s == "--shell" || s == "-g" || s == "--group" || s == "-G" || s == "--supp-group" || s == "-w" || s == "--whitelist-environment":
			if s == "-u" || s == "--user" {
				user = true
			}
			i++
		case s == "--" && user && w.name == "runuser":
			out.argv = args[i+1:]
			return out
		case !strings.HasPrefix(s, "-") && user && w.name == "runuser":
			out.argv = args[i:]
			return out
		}
	}
	if text != nil {
		out.texts = []runText{{text: *text}}
		return out
	}
	out.texts = []runText{{text: w.c.stdin}}
	return out
}

func runSg(w *wrapCall) wrapped {
	args := w.args
	if len(args) > 0 && args[0].String() == "-" {
		args = args[1:]
	}
	if len(args) < 2 {
		return wrapped{}
	}
	args = args[1:]
	if s, _ := args[0].Text(); s == "-c" {
		args = args[1:]
	}
	return wrapped{texts: []runText{{text: Join(args, " ")}}, other: true}
}

// runCapsh: capsh's options, then after -- the arguments of bash.
func runCapsh(w *wrapCall) wrapped {
	for i, a := range w.args {
		if s, _ := a.Text(); s == "--" {
			sub := *w
			sub.args = w.args[i+1:]
			out := runShell(&sub)
			out.other = true
			return out
		}
	}
	return wrapped{}
}
