package guard

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/sophonz/st/internal/shell"
)

// Interpreters run code that may start programs (os.system, system(),
// exec, backquotes). Where the code is readable, its string literals are
// read as shell commands: each alone, joined as an argument list, and
// joined where the code concatenates them.

// interp checks the code an interpreter runs: inline (-c, -e...) or from
// standard input.
func (ch *checker) interp(c *shell.Cmd, name string) string {
	lang := shell.Interpreter(name)
	switch lang {
	case "sed":
		return ch.sedScript(c, c.Args[1:])
	case "vim":
		return ch.vimCommands(c, c.Args[1:])
	}
	code := c.InlineCode()
	if lang == "tcl" || lang == "e" {
		// exec and spawn run their words as a program.
		for _, k := range code {
			t, _ := k.Text()
			for _, line := range strings.FieldsFunc(t, func(r rune) bool { return r == '\n' || r == ';' || r == '[' || r == ']' }) {
				f := strings.Fields(line)
				if len(f) > 1 && (f[0] == "exec" || f[0] == "spawn" || f[0] == "system") {
					if r := ch.text(c, shell.Lit(strings.Join(f[1:], " ")), name+" "+f[0], nil); r != "" {
						return r
					}
				}
			}
		}
	}
	for _, k := range code {
		if r := ch.code(c, k, name); r != "" {
			return r
		}
	}
	return ""
}

// sedE finds GNU sed's e command (runs its text) and s///e (runs the
// pattern space, here the replacement).
var sedE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)(?:^|[;{}]|[0-9$/])\s*e\s+([^;\n}]+)`) })

func (ch *checker) sedScript(c *shell.Cmd, args []shell.Arg) string {
	var scripts []shell.Arg
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Text()
		if !ok {
			if len(scripts) == 0 {
				scripts = append(scripts, args[i])
			}
			continue
		}
		switch {
		case s == "-e" || s == "--expression":
			if i+1 < len(args) {
				scripts = append(scripts, args[i+1])
				i++
			}
		case strings.HasPrefix(s, "--expression="):
			scripts = append(scripts, shell.Lit(s[len("--expression="):]))
		case s == "-f" || s == "--file" || s == "-l" || s == "--line-length":
			i++
		case strings.HasPrefix(s, "-"):
			if k := strings.IndexByte(s, 'e'); k > 0 && !strings.HasPrefix(s, "--") {
				if k+1 < len(s) {
					scripts = append(scripts, shell.Lit(s[k+1:]))
				} else if i+1 < len(args) {
					scripts = append(scripts, args[i+1])
					i++
				}
			}
		default:
			if len(scripts) == 0 {
				scripts = append(scripts, args[i])
			}
			i = len(args)
		}
	}
	for _, sc := range scripts {
		text, ok := sc.Text()
		if !ok {
			text = sc.String()
		}
		for _, m := range sedE().FindAllStringSubmatch(text, -1) {
			if r := ch.text(c, shell.Lit(m[1]), "sed e", nil); r != "" {
				return r
			}
		}
		for _, rep := range sedExecReplacements(text) {
			if r := ch.text(c, shell.Lit(rep), "sed s///e", nil); r != "" {
				return r
			}
		}
	}
	return ""
}

// sedExecReplacements finds the replacements of s commands with the e
// flag.
func sedExecReplacements(script string) []string {
	var out []string
	for i := 0; i+1 < len(script); i++ {
		if script[i] != 's' || (i > 0 && isWordByte(script[i-1])) {
			continue
		}
		d := script[i+1]
		if d == '\\' || d == '\n' || isWordByte(d) {
			continue
		}
		parts := []string{}
		j := i + 2
		var b strings.Builder
		for j < len(script) && len(parts) < 2 {
			switch {
			case script[j] == '\\' && j+1 < len(script):
				b.WriteByte(script[j+1])
				j += 2
				continue
			case script[j] == d:
				parts = append(parts, b.String())
				b.Reset()
			default:
				b.WriteByte(script[j])
			}
			j++
		}
		if len(parts) < 2 {
			continue
		}
		k := j
		for k < len(script) && strings.IndexByte("gpiImMe0123456789w", script[k]) >= 0 {
			if script[k] == 'w' {
				break
			}
			k++
		}
		if strings.Contains(script[j:k], "e") {
			out = append(out, parts[1])
		}
		i = j - 1
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// code checks code for shell commands in its string literals.
func (ch *checker) code(c *shell.Cmd, code shell.Arg, name string) string {
	text, ok := code.Text()
	if !ok {
		// A value inside the code may be any code, as "$X" in sh -c.
		return unknown(fmt.Sprintf("%s's code holds %s, which st cannot know, and code may run anything", name, show(holesOf(code))),
			"Pass values to the code as arguments (python3 -c 'import sys; print(sys.argv[1])' \"$X\", awk -v x=\"$X\" '...') rather than inside its text.")
	}
	if len(text) > 256<<10 {
		return cannotCheck(name + "'s code is longer than st reads")
	}
	if sq := squash(text); strings.Contains(sq, "tmuxkillserver") || strings.Contains(sq, "tmuxkillsession") ||
		strings.Contains(sq, "pkilltmux") || strings.Contains(sq, "killalltmux") {
		return refuse(fmt.Sprintf("%s's code holds a command that stops the tmux server", name))
	}
	if r := ch.codeSignals(c, text, name); r != "" {
		return r
	}
	if r := ch.codeFed(c, text, name); r != "" {
		return r
	}
	// The files the code writes (open('x.sh', 'w')) are names, not
	// commands: read as commands, they would be programs it just wrote.
	written := map[string]bool{}
	for _, w := range c.Writes() {
		if p, ok := w.Path.Text(); ok && strings.HasSuffix(w.What, " code") {
			written[p] = true
		}
	}
	lits := slices.DeleteFunc(stringLits(text), func(l string) bool { return written[l] })
	via := name + " code"
	for _, l := range lits {
		if r := ch.text(c, shell.Lit(l), via, nil); r != "" {
			return r
		}
	}
	// ["tmux", "kill-server"] as an argument list, from each literal on.
	for i := 0; i+1 < len(lits) && i < 16; i++ {
		if r := ch.text(c, shell.Lit(strings.Join(lits[i:], " ")), via, nil); r != "" {
			return r
		}
	}
	return ""
}

// holesOf shows the parts of an Arg st cannot know.
func holesOf(a shell.Arg) string {
	var srcs []string
	for _, h := range a.Holes() {
		srcs = append(srcs, h.Src)
	}
	return strings.Join(srcs, " ")
}

// squash keeps the letters and digits of code, lower-cased: what is left
// when concatenation and quoting are taken away.
func squash(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteByte(c)
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		}
	}
	return b.String()
}

// stringLits returns the string literals of a program in a C-like or
// Python-like language ('...', "...", `...`, triple quotes), with
// literals the code joins with + . or .. merged.
func stringLits(code string) []string {
	type lit struct {
		s          string
		start, end int
	}
	var lits []lit
	for i := 0; i < len(code) && len(lits) < 64; i++ {
		q := code[i]
		if q != '\'' && q != '"' && q != '`' {
			continue
		}
		triple := strings.HasPrefix(code[i:], strings.Repeat(string(q), 3))
		j := i + 1
		if triple {
			j = i + 3
		}
		var b strings.Builder
		for j < len(code) {
			c := code[j]
			if c == '\\' && j+1 < len(code) {
				switch e := code[j+1]; e {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				default:
					b.WriteByte(e)
				}
				j += 2
				continue
			}
			if triple && strings.HasPrefix(code[j:], strings.Repeat(string(q), 3)) {
				j += 2
				break
			}
			if !triple && c == q {
				break
			}
			if c == '\n' && !triple && q != '`' {
				break
			}
			b.WriteByte(c)
			j++
		}
		lits = append(lits, lit{b.String(), i, j})
		i = j
	}
	var out []string
	for k := 0; k < len(lits); k++ {
		s := lits[k].s
		for k+1 < len(lits) && strings.Trim(code[lits[k].end+1:lits[k+1].start], " \t\n+.") == "" {
			k++
			s += lits[k].s
		}
		out = append(out, s)
	}
	return out
}

// vimCommands: vim's -c, --cmd and +commands; :!cmd and the like run
// shell text.
func (ch *checker) vimCommands(c *shell.Cmd, args []shell.Arg) string {
	var cmds []shell.Arg
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Text()
		switch {
		case ok && (s == "-c" || s == "--cmd" || s == "-S"):
			if i+1 < len(args) {
				if s != "-S" {
					cmds = append(cmds, args[i+1])
				}
				i++
			}
		case ok && strings.HasPrefix(s, "+") && len(s) > 1:
			cmds = append(cmds, shell.Lit(s[1:]))
		case !ok && i > 0:
			if p, _ := args[i-1].Text(); p == "-c" || p == "--cmd" {
				cmds = append(cmds, args[i])
			}
		}
	}
	for _, k := range cmds {
		t, ok := k.Text()
		if !ok {
			return unknown(fmt.Sprintf("%s runs vim commands st cannot read", quote(showCmd(c))), "Write them plainly.")
		}
		if i := strings.IndexByte(t, '!'); i >= 0 {
			if r := ch.text(c, shell.Lit(t[i+1:]), "vim !", nil); r != "" {
				return r
			}
		}
		if r := ch.code(c, k, "vim"); r != "" {
			return r
		}
	}
	return ""
}

// Code that signals a process is judged as kill is: the pid must be one
// st can check. Code that reads $TMUX (the server's socket and pid) and
// runs programs, signals, connects or removes files with what it read
// is refused: st does not follow values through code.

// pidFirst are the calls that take the pid first (os.kill(pid, sig)),
// sigFirst those that take the signal first (Process.kill(sig, pid)).
var (
	pidFirst = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(?:os\.kill|os\.killpg|os\.pidfd_open|process\.kill|Deno\.kill|posix_kill|posix\.kill|signal\.kill)\s*\(`)
	})
	sigFirst = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\bProcess\.kill\s*\(|(?:^|[^.\w$])kill\s*\(|(?:^|[^.\w$])kill\s+[-'"\w]`)
	})
	// tmuxName is the name TMUX (not TMUX_TMPDIR) in code, as a variable
	// or a string.
	tmuxName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|[^A-Za-z0-9_])TMUX(?:[^A-Za-z0-9_]|$)`) })
	// codeActs are what code may do with a value: run a program, signal,
	// connect, remove or rename a file.
	codeActs = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile("(?i)\\b(?:system|exec\\w*|spawn\\w*|popen\\w*|subprocess|child_process|shell_exec|passthru|proc_open|" +
			"kill\\w*|connect|socket|unlink\\w*|remove\\w*|rmtree|rmdir\\w*|rename\\w*|os\\.replace|rmSync|io\\.popen|os\\.execute|Command)\\b|`|\\bqx\\b|%x")
	})
)

// codeSignals judges the kill calls of code and what it does with $TMUX.
func (ch *checker) codeSignals(c *shell.Cmd, code, name string) string {
	d := name + "'s code"
	for _, call := range killCalls(code, shell.Interpreter(name)) {
		if r := ch.pid(c, d+" ("+call.src+")", call.pid); r != "" {
			return r
		}
	}
	if tmuxName().MatchString(code) || slices.ContainsFunc(stringLits(code), func(l string) bool { return tmuxName().MatchString(l) }) {
		if m := codeActs().FindString(code); m != "" {
			return refuse(fmt.Sprintf("%s reads $TMUX (the socket and pid of the tmux server this agent runs in) and %s with it; "+
				"st does not follow values through code, so pass what the code needs as a plain argument", d, show(m)))
		}
	}
	return ""
}

// killCall is a pid a call in code signals.
type killCall struct {
	src string
	pid shell.Arg
}

// killCalls finds the pids code signals: each argument that is a pid,
// written plainly, the program's own, or an expression st cannot read
// (a hole, $TMUX's when the expression reads TMUX). Signal 0 only checks.
func killCalls(code, lang string) []killCall {
	var out []killCall
	for _, m := range pidFirst().FindAllStringIndex(code, 16) {
		args := shell.CallArgs(code[m[1]:])
		if len(args) == 0 || len(args) > 1 && strings.TrimSpace(args[1]) == "0" {
			continue
		}
		pid := args[0]
		if strings.Contains(code[m[0]:m[1]], "killpg") {
			pid = "-" + pid
		}
		out = append(out, killCall{src: code[m[0]:m[1]] + "...", pid: pidExpr(pid)})
	}
	if lang != "perl" && lang != "ruby" {
		return out
	}
	for _, m := range sigFirst().FindAllStringIndex(code, 16) {
		at := m[1]
		if !strings.HasSuffix(code[m[0]:m[1]], "(") {
			at-- // the signal's first character
		}
		args := shell.CallArgs(code[at:])
		if len(args) < 2 || strings.Trim(strings.TrimSpace(args[0]), `'"`) == "0" {
			continue
		}
		for _, p := range args[1:] {
			out = append(out, killCall{src: strings.TrimSpace(code[m[0]:m[1]]) + "...", pid: pidExpr(p)})
		}
	}
	return out
}

// ownPid are the expressions for the program's own pid.
var ownPid = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:os\.getpid\(\)|process\.pid|Process\.pid|\$\$|getmypid\(\)|posix\.getpid\(\))$`)
})

// pidExpr is a pid expression of code as a word of the shell.
func pidExpr(e string) shell.Arg {
	e = strings.TrimSpace(e)
	neg := strings.HasPrefix(e, "-")
	if n := strings.TrimSpace(strings.TrimPrefix(e, "-")); isDigits(n) {
		if neg {
			return shell.Lit("-" + n)
		}
		return shell.Lit(n)
	}
	if ownPid().MatchString(e) {
		return shell.HoleArg(&shell.Hole{Kind: shell.FromSpecial, Var: "$", Src: e})
	}
	if tmuxName().MatchString(e) {
		return shell.HoleArg(&shell.Hole{Kind: shell.FromVar, Var: "TMUX", Src: e})
	}
	return shell.HoleArg(&shell.Hole{Kind: shell.FromOutput, Src: e})
}

// envName finds the names code may read from its environment.
var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`) })

// codeFed refuses code that runs programs, signals or connects when what
// the interpreter is given holds a value the guard knows is the server's:
// its socket or pid ($TMUX, as text or a hole), or the output of a command
// that finds the server's pids (pgrep tmux). The code may build a command
// from it (awk '{system("kill " $2)}' fed $TMUX): st does not follow
// values through code. What it is given: its arguments (awk -v, ARGV),
// its standard input, and the variables of its environment the code
// names.
func (ch *checker) codeFed(c *shell.Cmd, code, name string) string {
	act := codeActs().FindString(code)
	if act == "" {
		return ""
	}
	fed := func(what string) string {
		return refuse(fmt.Sprintf("%s's code is given %s, which holds the tmux server's socket or pid, and %s with what it is given; "+
			"st does not follow values through code, so pass what the code needs as a plain argument", name, what, show(act)))
	}
	// The code itself (an argument, or standard input) is not what it is
	// given: a number in it is not the server's pid.
	isCode := func(a shell.Arg) bool { t, ok := a.Text(); return ok && t == code }
	for _, a := range c.Args[1:] {
		if !isCode(a) && ch.serverValue(a, 0) {
			return fed(show(a.String()))
		}
	}
	if !isCode(c.Stdin) && ch.serverValue(c.Stdin, 0) {
		return fed("its standard input")
	}
	seen := map[string]bool{}
	for _, v := range envName().FindAllString(code, 256) {
		if seen[v] || v == "TMUX" {
			continue // TMUX itself: codeSignals
		}
		seen[v] = true
		if val, set := c.Getenv(v); set == shell.Yes && ch.serverValue(val, 0) {
			return fed("$" + v)
		}
	}
	return ""
}

// serverValue: a value the guard knows holds the server's socket or pid:
// text with the socket's path or $TMUX's pid in it, a hole made from
// $TMUX or from a command that finds the server's pids, or the output of
// a command given such a value (echo $TMUX | cut -d, -f2).
func (ch *checker) serverValue(a shell.Arg, depth int) bool {
	if depth > 4 {
		return false
	}
	if s := a.String(); strings.Contains(s, ch.ours) || ch.real != "" && strings.Contains(s, ch.real) {
		return true
	}
	if pid := ch.serverPidText(); pid != "" {
		if s, ok := a.Text(); ok && slices.Contains(strings.FieldsFunc(s, notDigit), pid) {
			return true
		}
	}
	for _, h := range a.Holes() {
		if fromTMUX(h) {
			return true
		}
		for _, from := range h.From {
			if ch.selects(from) || ch.serverValue(from.Stdin, depth+1) ||
				slices.ContainsFunc(from.Args, func(x shell.Arg) bool { return ch.serverValue(x, depth+1) }) {
				return true
			}
		}
	}
	return false
}

// serverPidText is the server's pid as $TMUX gives it ("" when it does
// not): no asking the server for a check of text.
func (ch *checker) serverPidText() string {
	if _, rest, ok := strings.Cut(ch.g.TmuxSocket, ","); ok {
		p, _, _ := strings.Cut(rest, ",")
		if isDigits(p) && p != "0" {
			return p
		}
	}
	return ""
}

func notDigit(r rune) bool { return r < '0' || r > '9' }
