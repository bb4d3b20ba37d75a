package worktree

import (
	"path"
	"strings"
)

// ShellWrites lists the paths a shell command line would write, as far as
// they can be read from its text, so that an agent's PreToolUse hook can
// hold a Bash call to the worker's scope. Paths are as written (relative to
// the agent's cwd, absolute, or "~/..."), except that a "cd DIR" or
// "git -C DIR" before them is applied; pass them through Rel.
//
// What it reads: redirections (> >> >| &> <>, any fd, not dups such as 2>&1
// and not /dev/null and friends); tee; cp, mv, install, ln (the target, and
// for mv also the sources, which it deletes); rm, rmdir, unlink, shred,
// touch, mkdir, truncate (their operands); chmod, chown, chgrp (the files);
// sed -i and perl -i (the files); dd of=; curl -o and wget -O; git checkout,
// restore, rm, mv, and the commands that put back files other than those
// they name (reset --hard, clean, stash, switch), which yield "." (the cwd:
// in a checkout shared with other workers they would undo their work too);
// apply_patch with
// its patch; and commands inside bash -c '...', eval, $(...), `...` and
// <(...). Wrappers such as sudo, env, nohup, time, timeout and nice are
// looked through.
//
// What it cannot read is left out rather than guessed: words made from
// variables or substitutions, "cd $DIR" (relative paths after it are
// dropped), and programs that write files of their own choosing (python,
// make, a script). A glob such as src/*.go is returned as written; a scope
// judges it as a path, which is right for "rm docs/*.md" and cautious for
// "rm *".
func ShellWrites(command string) []string {
	w := &shellWalker{seen: map[string]bool{}}
	w.run(command, "", 0)
	return w.out
}

// maxShellDepth bounds bash -c inside $(...) inside eval..., so that a
// crafted command cannot make the hook recurse without end.
const maxShellDepth = 8

type tokKind uint8

const (
	tWord tokKind = iota
	tOp
)

type token struct {
	kind tokKind
	op   string // for tOp: ";", "&&", "|", "\n", "(", ">", ">>", "<<", ...
	text string // for tWord: the word after quote removal
	// lit means the word has no expansion, so text is what the command
	// gets; words with $VAR, $(...) or `...` in them cannot be read.
	lit  bool
	subs []string // commands inside $(...), `...`, <(...) and >(...)
	body string   // for "<<" and "<<-": the here-document
}

// lexer splits a command line into words and operators the way the shell
// does, as far as it matters for finding written files.
type lexer struct {
	s    string
	i    int
	toks []token

	word    strings.Builder
	inWord  bool
	lit     bool
	subs    []string
	pending []heredoc // here-documents whose bodies start after the next newline
	delimOf int       // index of a "<<" token still waiting for its delimiter word, or -1
}

type heredoc struct {
	tok   int
	delim string
	dash  bool // <<- strips leading tabs
}

func lex(s string) []token {
	l := &lexer{s: s, delimOf: -1}
	l.run()
	return l.toks
}

func (l *lexer) startWord() {
	if !l.inWord {
		l.inWord = true
		l.lit = true
		l.word.Reset()
		l.subs = nil
	}
}

func (l *lexer) endWord() {
	if !l.inWord {
		return
	}
	l.inWord = false
	t := token{kind: tWord, text: l.word.String(), lit: l.lit, subs: l.subs}
	if l.delimOf >= 0 {
		op := l.toks[l.delimOf].op
		l.pending = append(l.pending, heredoc{tok: l.delimOf, delim: t.text, dash: op == "<<-"})
		l.delimOf = -1
	}
	l.toks = append(l.toks, t)
}

var shellOps = []string{"&>>", "<<-", "<<<", "&&", "||", ";;", "|&", "&>", ">>", ">|", ">&", "<&", "<>", "<<", ";", "&", "|", "(", ")", "<", ">"}

func (l *lexer) run() {
	s := l.s
	for l.i < len(s) {
		c := s[l.i]
		switch {
		case c == '\\' && l.i+1 < len(s) && s[l.i+1] == '\n':
			l.i += 2 // line continuation
		case c == '\\':
			l.startWord()
			if l.i+1 < len(s) {
				l.word.WriteByte(s[l.i+1])
			}
			l.i += 2
		case c == ' ' || c == '\t' || c == '\r':
			l.endWord()
			l.i++
		case c == '\n':
			l.endWord()
			l.toks = append(l.toks, token{kind: tOp, op: "\n"})
			l.i++
			l.readBodies()
		case c == '#' && !l.inWord:
			for l.i < len(s) && s[l.i] != '\n' {
				l.i++
			}
		case c == '\'':
			l.startWord()
			end := strings.IndexByte(s[l.i+1:], '\'')
			if end < 0 {
				l.word.WriteString(s[l.i+1:])
				l.i = len(s)
			} else {
				l.word.WriteString(s[l.i+1 : l.i+1+end])
				l.i += end + 2
			}
		case c == '"':
			l.startWord()
			l.i++
			l.doubleQuoted()
		case c == '$':
			l.startWord()
			l.dollar()
		case c == '`':
			l.startWord()
			l.lit = false
			l.subs = append(l.subs, l.backquoted())
		case (c == '<' || c == '>') && l.i+1 < len(s) && s[l.i+1] == '(':
			// Process substitution: a word (a /dev/fd path) whose command
			// runs too.
			l.startWord()
			l.lit = false
			l.i++
			l.subs = append(l.subs, l.balanced())
		case c == '(' && l.i+1 < len(s) && s[l.i+1] == '(' && !l.inWord:
			// (( arithmetic )): its '>' compares, it does not redirect.
			l.i++
			l.arithmetic()
		case strings.IndexByte(";&|()<>", c) >= 0:
			if l.inWord && (c == '<' || c == '>') && l.lit && isDigits(l.word.String()) {
				l.inWord = false // 2>file: the number is the fd, not a word
			}
			l.endWord()
			op := ""
			for _, o := range shellOps {
				if strings.HasPrefix(s[l.i:], o) {
					op = o
					break
				}
			}
			l.i += len(op)
			l.toks = append(l.toks, token{kind: tOp, op: op})
			if op == "<<" || op == "<<-" {
				l.delimOf = len(l.toks) - 1
			}
		default:
			l.startWord()
			l.word.WriteByte(c)
			l.i++
		}
	}
	l.endWord()
	l.readBodies()
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// doubleQuoted reads up to the closing quote; l.i is just after the opening one.
func (l *lexer) doubleQuoted() {
	s := l.s
	for l.i < len(s) {
		c := s[l.i]
		switch {
		case c == '"':
			l.i++
			return
		case c == '\\' && l.i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[l.i+1]) >= 0:
			if s[l.i+1] != '\n' {
				l.word.WriteByte(s[l.i+1])
			}
			l.i += 2
		case c == '$':
			l.dollar()
		case c == '`':
			l.lit = false
			l.subs = append(l.subs, l.backquoted())
		default:
			l.word.WriteByte(c)
			l.i++
		}
	}
}

// dollar reads an expansion starting at '$'.
func (l *lexer) dollar() {
	s := l.s
	l.i++
	if l.i >= len(s) {
		l.word.WriteByte('$')
		return
	}
	c := s[l.i]
	switch {
	case strings.HasPrefix(s[l.i:], "(("):
		l.lit = false
		l.i++
		l.arithmetic()
	case c == '(':
		l.lit = false
		l.subs = append(l.subs, l.balanced())
	case c == '{':
		l.lit = false
		depth := 0
		for ; l.i < len(s); l.i++ {
			if s[l.i] == '{' {
				depth++
			} else if s[l.i] == '}' {
				depth--
				if depth == 0 {
					l.i++
					return
				}
			}
		}
	case c == '\'':
		// $'...' (ANSI-C quoting): the text, with the common escapes.
		l.i++
		for l.i < len(s) && s[l.i] != '\'' {
			if s[l.i] == '\\' && l.i+1 < len(s) {
				l.i++
				switch s[l.i] {
				case 'n':
					l.word.WriteByte('\n')
				case 't':
					l.word.WriteByte('\t')
				default:
					l.word.WriteByte(s[l.i])
				}
			} else {
				l.word.WriteByte(s[l.i])
			}
			l.i++
		}
		l.i++
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		l.lit = false
		for l.i < len(s) && (s[l.i] == '_' || s[l.i] >= 'a' && s[l.i] <= 'z' || s[l.i] >= 'A' && s[l.i] <= 'Z' || s[l.i] >= '0' && s[l.i] <= '9') {
			l.i++
		}
	case strings.IndexByte("0123456789@*#?$!-", c) >= 0:
		l.lit = false
		l.i++
	default:
		l.word.WriteByte('$')
	}
}

// balanced reads from '(' at l.i to its matching ')', skipping quotes, and
// returns what is between; l.i ends just after the ')'.
func (l *lexer) balanced() string {
	s := l.s
	start := l.i + 1
	depth := 0
	for ; l.i < len(s); l.i++ {
		switch s[l.i] {
		case '\\':
			l.i++
		case '\'':
			if end := strings.IndexByte(s[l.i+1:], '\''); end >= 0 {
				l.i += end + 1
			} else {
				l.i = len(s)
			}
		case '"':
			for l.i++; l.i < len(s) && s[l.i] != '"'; l.i++ {
				if s[l.i] == '\\' {
					l.i++
				}
			}
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				l.i++
				return s[start : l.i-1]
			}
		}
	}
	if start > len(s) {
		return ""
	}
	return s[start:]
}

// arithmetic skips "(...))" of an arithmetic "((...))" whose first '(' is
// already read.
func (l *lexer) arithmetic() {
	l.balanced()
	if l.i < len(l.s) && l.s[l.i] == ')' {
		l.i++
	}
}

// backquoted reads `...` from the opening backquote and returns the command.
func (l *lexer) backquoted() string {
	s := l.s
	var b strings.Builder
	for l.i++; l.i < len(s); l.i++ {
		switch s[l.i] {
		case '\\':
			if l.i+1 < len(s) {
				l.i++
				b.WriteByte(s[l.i])
			}
		case '`':
			l.i++
			return b.String()
		default:
			b.WriteByte(s[l.i])
		}
	}
	return b.String()
}

// readBodies reads the here-documents announced on the line just ended.
func (l *lexer) readBodies() {
	for _, h := range l.pending {
		var body strings.Builder
		for l.i < len(l.s) {
			end := strings.IndexByte(l.s[l.i:], '\n')
			var line string
			if end < 0 {
				line, l.i = l.s[l.i:], len(l.s)
			} else {
				line, l.i = l.s[l.i:l.i+end], l.i+end+1
			}
			cmp := line
			if h.dash {
				cmp = strings.TrimLeft(line, "\t")
			}
			if cmp == h.delim {
				break
			}
			body.WriteString(line)
			body.WriteByte('\n')
		}
		l.toks[h.tok].body = body.String()
	}
	l.pending = nil
}

// shellWalker interprets the tokens: simple commands, their redirections,
// and the cwd that cd changes.
type shellWalker struct {
	out  []string
	seen map[string]bool
}

// dir is where relative paths are: "" is the agent's cwd; unknown after
// "cd $X", when relative paths are dropped.
type dir struct {
	path    string
	unknown bool
}

func (d dir) join(p string) (string, bool) {
	if strings.HasPrefix(p, "/") || p == "~" || strings.HasPrefix(p, "~/") {
		return p, true
	}
	if d.unknown {
		return "", false
	}
	if d.path == "" {
		return p, true
	}
	return path.Join(d.path, p), true
}

func (w *shellWalker) add(d dir, t token) {
	if t.kind != tWord || !t.lit || t.text == "" {
		return
	}
	w.addPath(d, t.text)
}

func (w *shellWalker) addPath(d dir, p string) {
	if p == "" || ignoredDevice(p) {
		return
	}
	full, ok := d.join(p)
	if !ok || w.seen[full] {
		return
	}
	w.seen[full] = true
	w.out = append(w.out, full)
}

func ignoredDevice(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/self/fd/")
}

type simpleCmd struct {
	words    []token
	heredocs []string
}

func (w *shellWalker) run(command, cwd string, depth int) {
	w.runIn(command, dir{path: cwd}, depth)
}

func (w *shellWalker) runIn(command string, start dir, depth int) {
	if depth > maxShellDepth {
		return
	}
	toks := lex(command)
	cur := start
	var stack []dir
	var cmd simpleCmd
	redir := ""       // a redirection operator waiting for its word
	testExpr := false // inside [[ ... ]], where < and > compare strings
	finish := func() {
		if len(cmd.words) > 0 {
			cur = w.simple(cmd, cur, depth)
		}
		cmd = simpleCmd{}
		redir = ""
	}
	for _, t := range toks {
		if t.kind == tWord {
			for _, sub := range t.subs {
				w.runIn(sub, cur, depth+1)
			}
			switch {
			case redir != "":
				switch redir {
				case ">", ">>", ">|", "&>", "&>>", "<>":
					w.add(cur, t)
				case ">&":
					if !isDigits(t.text) && t.text != "-" {
						w.add(cur, t) // >&file is &>file
					}
				}
				redir = ""
			case testExpr:
				if t.text == "]]" {
					testExpr = false
				}
			default:
				if len(cmd.words) == 0 && t.lit && t.text == "[[" {
					testExpr = true
				}
				cmd.words = append(cmd.words, t)
			}
			continue
		}
		switch t.op {
		case ">", ">>", ">|", "&>", "&>>", ">&", "<>", "<", "<&", "<<<":
			if !testExpr {
				redir = t.op
			}
		case "<<", "<<-":
			redir = t.op // the delimiter word: not a path
			cmd.heredocs = append(cmd.heredocs, t.body)
		case "(":
			finish()
			stack = append(stack, cur)
		case ")":
			finish()
			if n := len(stack); n > 0 {
				cur, stack = stack[n-1], stack[:n-1]
			}
		default: // ; & && || | |& ;; newline
			finish()
			testExpr = false
		}
	}
	finish()
}

// wrappers run the rest of their words as a command; the value lists the
// short options that take an argument, so that it is not taken for the
// command.
var wrappers = map[string]string{
	"sudo": "ugCDhpUrtT", "doas": "uC", "env": "uCS", "nohup": "", "time": "f",
	"timeout": "sk", "nice": "n", "ionice": "cnp", "stdbuf": "ioe", "command": "",
	"exec": "a", "builtin": "", "chronic": "", "unbuffer": "",
}

// keywords that may start a command line before the real command.
var keywords = map[string]bool{
	"!": true, "{": true, "}": true, "then": true, "else": true, "do": true, "if": true,
	"elif": true, "while": true, "until": true, "fi": true, "done": true, "esac": true,
}

// simple handles one simple command and returns the cwd after it.
func (w *shellWalker) simple(c simpleCmd, cwd dir, depth int) dir {
	words := c.words
	for len(words) > 0 {
		t := words[0]
		if !t.lit {
			return cwd
		}
		if keywords[t.text] || isAssignment(t.text) {
			words = words[1:]
			continue
		}
		name := path.Base(t.text)
		if opts, ok := wrappers[name]; ok && !(name == "command" && len(words) > 1 && (words[1].text == "-v" || words[1].text == "-V")) {
			words = skipOptions(words[1:], opts)
			if name == "timeout" && len(words) > 0 {
				words = words[1:] // the duration
			}
			continue
		}
		break
	}
	if len(words) == 0 {
		return cwd
	}
	name := path.Base(words[0].text)
	args := words[1:]
	switch name {
	case "for", "case", "select", "function", "[[", "[", "test", "xargs":
		// Their words are not file operands (xargs reads its own from
		// stdin, which cannot be known here).
		return cwd
	case "cd", "pushd":
		ops, _ := parseArgs(args, "")
		switch {
		case len(ops) == 0:
			return dir{path: "~"}
		case !ops[0].lit || ops[0].text == "-":
			return dir{unknown: true}
		}
		p, ok := cwd.join(ops[0].text)
		if !ok {
			return dir{unknown: true}
		}
		return dir{path: path.Clean(p)}
	case "tee":
		ops, _ := parseArgs(args, "")
		w.addAll(cwd, ops)
	case "cp", "mv", "install", "ln":
		w.copyLike(name, cwd, args)
	case "rm", "rmdir", "unlink", "shred", "touch", "mkdir", "truncate":
		ops, _ := parseArgs(args, map[string]string{"touch": "dtr", "mkdir": "m", "truncate": "sr", "shred": "ns"}[name])
		w.addAll(cwd, ops)
	case "chmod", "chown", "chgrp":
		w.chmodLike(cwd, args)
	case "sed", "perl":
		w.inPlace(name, cwd, args)
	case "dd":
		for _, a := range args {
			if a.lit && strings.HasPrefix(a.text, "of=") {
				w.addPath(cwd, strings.TrimPrefix(a.text, "of="))
			}
		}
	case "curl", "wget":
		short := map[string]string{"curl": "o", "wget": "O"}[name]
		long := map[string]string{"curl": "--output", "wget": "--output-document"}[name]
		_, opts := parseArgs(args, short+"AHXdeFmruxwbcEKT")
		for _, o := range opts {
			if (o.name == "-"+short || o.name == long) && o.val.lit {
				w.add(cwd, o.val)
			}
		}
	case "git":
		w.git(cwd, args)
	case "bash", "sh", "zsh", "dash", "ksh":
		for i, a := range args {
			if !a.lit || !strings.HasPrefix(a.text, "-") || strings.HasPrefix(a.text, "--") {
				break
			}
			if strings.Contains(a.text, "c") && i+1 < len(args) && args[i+1].lit {
				w.runIn(args[i+1].text, cwd, depth+1)
				break
			}
		}
	case "eval":
		var parts []string
		for _, a := range args {
			if !a.lit {
				return cwd
			}
			parts = append(parts, a.text)
		}
		w.runIn(strings.Join(parts, " "), cwd, depth+1)
	case "apply_patch", "applypatch":
		texts := c.heredocs
		for _, a := range args {
			if a.lit {
				texts = append(texts, a.text)
			}
		}
		for _, t := range texts {
			for _, p := range PatchPaths(t) {
				w.addPath(cwd, p)
			}
		}
	}
	return cwd
}

func isAssignment(s string) bool {
	eq := strings.IndexByte(s, '=')
	if eq <= 0 {
		return false
	}
	for i := 0; i < eq; i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func (w *shellWalker) addAll(cwd dir, ts []token) {
	for _, t := range ts {
		w.add(cwd, t)
	}
}

// skipOptions drops a wrapper's options (and env's NAME=value words) up to
// the command it runs.
func skipOptions(ts []token, withValue string) []token {
	for len(ts) > 0 {
		t := ts[0]
		switch {
		case t.text == "--":
			return ts[1:]
		case isAssignment(t.text):
			ts = ts[1:]
		case strings.HasPrefix(t.text, "--"):
			ts = ts[1:]
		case strings.HasPrefix(t.text, "-") && len(t.text) > 1:
			ts = ts[1:]
			last := t.text[len(t.text)-1]
			if strings.IndexByte(withValue, last) >= 0 && len(ts) > 0 {
				ts = ts[1:]
			}
		default:
			return ts
		}
	}
	return ts
}

type option struct {
	name string // "-t" or "--target-directory"
	val  token  // its argument, if it takes one
}

// parseArgs splits arguments into operands and options the getopt way:
// short options cluster ("-rf"); the letters in withValue take an argument
// (the rest of the cluster, or the next word); long options take one only
// as --name=value, or as the next word when listed in longWithValue; "--"
// ends the options.
func parseArgs(ts []token, withValue string, longWithValue ...string) (ops []token, opts []option) {
	for i := 0; i < len(ts); i++ {
		t := ts[i]
		switch {
		case t.text == "--" && t.lit:
			return append(ops, ts[i+1:]...), opts
		case strings.HasPrefix(t.text, "--") && t.lit:
			name, val, hasVal := strings.Cut(t.text, "=")
			o := option{name: name}
			if hasVal {
				o.val = token{kind: tWord, text: val, lit: true}
			} else if contains(longWithValue, name) && i+1 < len(ts) {
				i++
				o.val = ts[i]
			}
			opts = append(opts, o)
		case strings.HasPrefix(t.text, "-") && len(t.text) > 1 && t.lit:
			for j := 1; j < len(t.text); j++ {
				o := option{name: "-" + t.text[j:j+1]}
				if strings.IndexByte(withValue, t.text[j]) >= 0 {
					if j+1 < len(t.text) {
						o.val = token{kind: tWord, text: t.text[j+1:], lit: true}
					} else if i+1 < len(ts) {
						i++
						o.val = ts[i]
					}
					opts = append(opts, o)
					break
				}
				opts = append(opts, o)
			}
		default:
			ops = append(ops, t)
		}
	}
	return ops, opts
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func hasOpt(opts []option, names ...string) (option, bool) {
	for _, o := range opts {
		if contains(names, o.name) {
			return o, true
		}
	}
	return option{}, false
}

// copyLike: cp, mv, install and ln write their target (a file, or a folder
// that receives the sources); mv also deletes its sources.
func (w *shellWalker) copyLike(name string, cwd dir, args []token) {
	withValue := map[string]string{"cp": "tS", "mv": "tS", "install": "tmogS", "ln": "tS"}[name]
	ops, opts := parseArgs(args, withValue, "--target-directory", "--suffix", "--mode", "--owner", "--group")
	if name == "install" {
		if _, ok := hasOpt(opts, "-d", "--directory"); ok {
			w.addAll(cwd, ops)
			return
		}
	}
	if t, ok := hasOpt(opts, "-t", "--target-directory"); ok {
		w.add(cwd, t.val)
		if name == "mv" {
			w.addAll(cwd, ops)
		}
		return
	}
	switch {
	case len(ops) >= 2:
		if name == "mv" {
			w.addAll(cwd, ops[:len(ops)-1])
		}
		w.add(cwd, ops[len(ops)-1])
	case len(ops) == 1 && name == "ln" && ops[0].lit:
		// "ln -s /x/y" makes the link y here.
		w.addPath(cwd, path.Base(ops[0].text))
	}
}

// chmodLike: the first operand is the mode or owner, unless --reference
// gives it; a mode may look like an option ("chmod -x f").
func (w *shellWalker) chmodLike(cwd dir, args []token) {
	var ops []token
	ref := false
	endOpts := false
	for _, a := range args {
		switch {
		case !endOpts && a.text == "--":
			endOpts = true
		case !endOpts && strings.HasPrefix(a.text, "--"):
			if strings.HasPrefix(a.text, "--reference") {
				ref = true
			}
		case !endOpts && len(a.text) > 1 && a.text[0] == '-' && strings.Trim(a.text[1:], "RfvcHLPh") == "":
		default:
			ops = append(ops, a)
		}
	}
	if !ref && len(ops) > 0 {
		ops = ops[1:]
	}
	w.addAll(cwd, ops)
}

// inPlace: sed -i and perl -i write the files they are given. Options are
// read as those programs do, so that "-i.bak", "-ni" and perl's "-pi -e"
// work, and "-ie" means "-i" with the suffix "e".
func (w *shellWalker) inPlace(name string, cwd dir, args []token) {
	inplace, script := false, false
	var ops []token
	afterI := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		t := a.text
		switch {
		case !a.lit:
			ops = append(ops, a)
		case t == "--":
			ops = append(ops, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(t, "--"):
			n, _, hasVal := strings.Cut(t, "=")
			switch n {
			case "--in-place":
				inplace = true
			case "--expression", "--file":
				script = true
				if !hasVal {
					i++
				}
			case "--line-length":
				if !hasVal {
					i++
				}
			}
		case len(t) > 1 && t[0] == '-':
			afterI = false
		cluster:
			for j := 1; j < len(t); j++ {
				switch t[j] {
				case 'i':
					inplace = true
					afterI = j == len(t)-1
					break cluster
				case 'e', 'f', 'E':
					if t[j] == 'E' && name == "sed" {
						continue
					}
					script = true
					if j == len(t)-1 {
						i++
					}
					break cluster
				case 'l':
					if name == "sed" {
						if j == len(t)-1 {
							i++
						}
						break cluster
					}
				}
			}
			continue
		default:
			// BSD sed's "-i ''": an empty suffix word, not the script.
			if afterI && t == "" && name == "sed" {
				afterI = false
				continue
			}
			ops = append(ops, a)
		}
		afterI = false
	}
	if !inplace {
		return
	}
	if !script && len(ops) > 0 {
		ops = ops[1:]
	}
	w.addAll(cwd, ops)
}

// git handles the git commands that write work-tree files.
func (w *shellWalker) git(cwd dir, args []token) {
	// Global options before the subcommand; -C moves the cwd.
	for len(args) > 0 && args[0].lit && strings.HasPrefix(args[0].text, "-") {
		t := args[0].text
		args = args[1:]
		switch {
		case t == "-C" && len(args) > 0:
			if !args[0].lit {
				cwd = dir{unknown: true}
			} else if p, ok := cwd.join(args[0].text); ok {
				cwd = dir{path: path.Clean(p)}
			} else {
				cwd = dir{unknown: true}
			}
			args = args[1:]
		case (t == "-c" || t == "--git-dir" || t == "--work-tree" || t == "--namespace") && len(args) > 0:
			args = args[1:]
		}
	}
	if len(args) == 0 || !args[0].lit {
		return
	}
	sub := args[0].text
	args = args[1:]
	whole := func() { w.addPath(cwd, ".") }
	switch sub {
	case "checkout":
		for i, a := range args {
			if a.lit && a.text == "--" {
				w.addAll(cwd, args[i+1:])
				return
			}
		}
		ops, _ := parseArgs(args, "bB", "--orphan", "--conflict")
		// Without "--" a word may be a branch; switching branches rewrites
		// files outside any scope, so reporting it as a path is right.
		w.addAll(cwd, ops)
	case "restore":
		ops, _ := parseArgs(args, "s", "--source")
		w.addAll(cwd, ops)
	case "rm":
		ops, _ := parseArgs(args, "")
		w.addAll(cwd, ops)
	case "mv":
		ops, _ := parseArgs(args, "")
		w.addAll(cwd, ops)
	case "reset":
		if _, opts := parseArgs(args, ""); len(opts) > 0 {
			if _, ok := hasOpt(opts, "--hard", "--merge", "--keep"); ok {
				whole()
			}
		}
	case "clean":
		ops, opts := parseArgs(args, "e", "--exclude")
		if _, dry := hasOpt(opts, "-n", "--dry-run"); dry {
			return
		}
		if len(ops) == 0 {
			whole()
		}
		w.addAll(cwd, ops)
	case "stash":
		if len(args) == 0 || contains([]string{"push", "save", "pop", "apply"}, args[0].text) {
			whole()
		}
	case "switch":
		_, opts := parseArgs(args, "cC", "--create", "--force-create")
		if _, ok := hasOpt(opts, "-c", "-C", "--create", "--force-create", "--orphan"); !ok {
			whole()
		}
	}
}
