package agent

// The guard decides whether a Bash command an agent is about to run would
// stop the tmux server the agent runs in. st's PreToolUse hook asks it for
// Claude Code and Codex alike (both block the call when the hook exits 2 or
// answers "deny"), so that no worker and no coordinator takes every other
// agent down with one `tmux kill-server` or `pkill tmux`.
//
// Guard is a pure function of the command text and where the agent runs. It
// reads the text much as a shell would, well enough for the spellings agents
// use: quoting, lists and pipelines, substitutions, here-documents, `sh -c`,
// `eval`, wrappers such as sudo, env and xargs, and tmux's own global flags,
// command lists and unique command prefixes. It leans towards letting a
// command through: it refuses only what names the agent's own server (or
// every process), never a command that names a different server.

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// GuardContext is what the hook knows about where the agent runs.
type GuardContext struct {
	TmuxSocket string // socket path of the agent's server, from $TMUX's first field ("" when not in tmux)
	TmuxTmpdir string // $TMUX_TMPDIR ("" = /tmp)
	UID        int
}

// Guard returns a non-empty reason when command would stop the agent's tmux server.
func Guard(command string, g GuardContext) (reason string) {
	st := &guardState{uid: strconv.Itoa(g.UID), budget: 32*len(command) + 1<<16}
	sock, _, _ := strings.Cut(g.TmuxSocket, ",")
	tmpdir := g.TmuxTmpdir
	if tmpdir == "" {
		tmpdir = "/tmp"
	}
	if sock != "" {
		st.ours = path.Clean(sock)
	} else {
		st.ours = path.Join(tmpdir, "tmux-"+st.uid, "default")
	}
	sc := &guardScope{env: map[string]guardVal{}}
	if sock != "" {
		sc.env["TMUX"] = guardVal{known: true, s: sock + ",0,0"}
	}
	if g.TmuxTmpdir != "" {
		sc.env["TMUX_TMPDIR"] = guardVal{known: true, s: g.TmuxTmpdir}
	}
	return st.script(command, sc)
}

const (
	guardMaxDepth = 8   // nested shells, substitutions and tmux command strings
	guardMaxBrace = 64  // words one brace expansion may produce
	guardMaxVars  = 256 // variables remembered per scope
	guardShowMax  = 120 // bytes of a command quoted in a reason
)

func guardRefuse(detail string) string {
	return "st guard: this command would stop the tmux server this agent runs in (" + detail +
		"); other agents and their work live there. Stop only what you started, by its pid or pane."
}

// guardCrude is the answer for text nested too deeply (or too large) to read
// properly: refuse only what plainly mentions killing tmux.
func guardCrude(src string) string {
	low := strings.ToLower(src)
	if strings.Contains(low, "kill-ser") || (strings.Contains(low, "tmux") && strings.Contains(low, "kill")) {
		return guardRefuse("a command nested too deeply to check that mentions tmux and kill")
	}
	return ""
}

type guardState struct {
	ours   string // cleaned socket path of the agent's server
	uid    string
	budget int // bytes of shell text still allowed to be read
}

// ---------------------------------------------------------------------------
// Variables and scopes

// guardVal is what the guard knows about a shell variable.
type guardVal struct {
	known   bool
	s       string // the value, or for an unknown value its source text
	ours    bool   // unknown, but derived from $TMUX: it names the agent's server
	tainted bool   // holds pids of the tmux server (from $(pgrep tmux) and such)
}

type guardScope struct {
	depth   int
	env     map[string]guardVal
	cleared bool // env -i: variables not in env are unset
}

// child is the scope of a nested shell text (substitution, sh -c, eval...).
func (sc *guardScope) child() *guardScope {
	c := sc.with()
	c.depth++
	return c
}

// with is a copy at the same depth: the environment of one command.
func (sc *guardScope) with() *guardScope {
	env := make(map[string]guardVal, len(sc.env)+1)
	for k, v := range sc.env {
		env[k] = v
	}
	return &guardScope{depth: sc.depth, env: env, cleared: sc.cleared}
}

func (sc *guardScope) set(name string, v guardVal) {
	if _, ok := sc.env[name]; ok || len(sc.env) < guardMaxVars || name == "TMUX" || name == "TMUX_TMPDIR" {
		sc.env[name] = v
	}
}

func (sc *guardScope) unset(name string) { sc.set(name, guardVal{known: true}) }

func (sc *guardScope) clear() {
	sc.env = map[string]guardVal{}
	sc.cleared = true
}

func (st *guardState) lookup(sc *guardScope, name string) guardVal {
	if v, ok := sc.env[name]; ok {
		return v
	}
	switch name {
	case "TMUX", "TMUX_TMPDIR":
		return guardVal{known: true} // set ones are in env from the start
	case "UID", "EUID":
		return guardVal{known: true, s: st.uid}
	}
	if sc.cleared {
		return guardVal{known: true}
	}
	return guardVal{s: "${" + name + "}"}
}

// ---------------------------------------------------------------------------
// Lexing: shell text into simple commands made of words made of parts.

type guardPartKind uint8

const (
	guardLit   guardPartKind = iota
	guardParam               // text: what is inside ${...}, or the bare name
	guardSubst               // text: the command inside $(...), `...`, <(...)
	guardArith               // text: what is inside $((...))
)

type guardPart struct {
	kind   guardPartKind
	text   string
	quoted bool
}

type guardWord struct {
	parts []guardPart
	raw   string
}

// lit adds literal text. Runs are not merged (that would be quadratic on
// long words); nothing depends on it.
func (w *guardWord) lit(text string, quoted bool) {
	w.parts = append(w.parts, guardPart{kind: guardLit, text: text, quoted: quoted})
}

func (w *guardWord) add(kind guardPartKind, text string, quoted bool) {
	w.parts = append(w.parts, guardPart{kind: kind, text: text, quoted: quoted})
}

// guardCmd is one simple command.
type guardCmd struct {
	words []guardWord
	extra []guardWord // redirection targets: their substitutions run too
	stdin []guardWord // here-documents and here-strings
	pipe  int         // commands with the same pipe form one pipeline
}

type guardLexer struct {
	s        string
	i        int
	cmds     []guardCmd
	cur      guardCmd
	nest     int // open compound commands (if, while, {, ( ...)
	pipeID   int
	piping   bool
	pipeNest int
	redir    string // redirection operator waiting for its target word
	funcName bool   // after `function`: the next word is a name
	heredocs []guardHeredoc
}

type guardHeredoc struct {
	delim  string
	strip  bool
	quoted bool
	cmd    int
}

const (
	guardSepList = iota
	guardSepPipe
	guardSepOpen
	guardSepClose
)

func guardLex(s string) []guardCmd {
	l := &guardLexer{s: s}
	l.run()
	return l.cmds
}

func (l *guardLexer) run() {
	s := l.s
	for l.i < len(s) {
		c := s[l.i]
		var next byte
		if l.i+1 < len(s) {
			next = s[l.i+1]
		}
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			l.i++
		case c == '\n':
			l.i++
			l.end(guardSepList)
			l.readHeredocs()
		case c == '#':
			for l.i < len(s) && s[l.i] != '\n' {
				l.i++
			}
		case c == ';':
			for l.i < len(s) && (s[l.i] == ';' || s[l.i] == '&') {
				l.i++
			}
			l.end(guardSepList)
		case c == '&' && next == '>':
			l.i++
			l.redirect()
		case c == '&':
			l.i++
			if next == '&' {
				l.i++
			}
			l.end(guardSepList)
		case c == '|':
			l.i++
			switch next {
			case '|':
				l.i++
				l.end(guardSepList)
			case '&':
				l.i++
				l.end(guardSepPipe)
			default:
				l.end(guardSepPipe)
			}
		case c == '(' && next == '(':
			// An arithmetic command: (( ... )).
			l.i = min(guardScan(s, l.i+1, ')')+1, len(s))
			if l.i < len(s) && s[l.i] == ')' {
				l.i++
			}
		case c == '(':
			l.i++
			l.end(guardSepOpen)
		case c == ')':
			l.i++
			l.end(guardSepClose)
		case (c == '<' || c == '>') && next != '(':
			l.redirect()
		default:
			w, fd := l.word()
			if !fd {
				l.addWord(w)
			}
		}
	}
	l.end(guardSepList)
}

func (l *guardLexer) redirect() {
	for _, op := range []string{"<<<", "<<-", "<<", "<>", "<&", "<", ">>", ">&", ">|", ">"} {
		if strings.HasPrefix(l.s[l.i:], op) {
			l.i += len(op)
			l.redir = op
			return
		}
	}
	l.i++
}

// word reads one word. fd reports a file-descriptor number just before a
// redirection (the 2 of 2>&1), which is no word.
func (l *guardLexer) word() (w guardWord, fd bool) {
	s := l.s
	start := l.i
loop:
	for l.i < len(s) {
		c := s[l.i]
		switch c {
		case ' ', '\t', '\r', '\n', ';', '&', '|', '(', ')':
			break loop
		case '<', '>':
			if l.i+1 < len(s) && s[l.i+1] == '(' {
				end := guardScan(s, l.i+2, ')')
				w.add(guardSubst, s[l.i+2:end], false)
				l.i = min(end+1, len(s))
				continue
			}
			break loop
		case '\\':
			switch {
			case l.i+1 >= len(s):
				w.lit("\\", false)
				l.i++
			case s[l.i+1] == '\n':
				l.i += 2
			default:
				w.lit(s[l.i+1:l.i+2], true)
				l.i += 2
			}
		case '\'':
			end := strings.IndexByte(s[l.i+1:], '\'')
			if end < 0 {
				w.lit(s[l.i+1:], true)
				l.i = len(s)
			} else {
				w.lit(s[l.i+1:l.i+1+end], true)
				l.i += end + 2
			}
		case '"':
			l.i++
			l.dq(&w, false)
		case '$':
			l.dollar(&w, false)
		case '`':
			l.backtick(&w, false)
		default:
			j := l.i + 1
			for j < len(s) && strings.IndexByte(" \t\r\n;&|()<>\\'\"$`", s[j]) < 0 {
				j++
			}
			w.lit(s[l.i:j], false)
			l.i = j
		}
	}
	w.raw = s[start:l.i]
	if l.i < len(s) && (s[l.i] == '<' || s[l.i] == '>') && guardIsFD(w.raw) {
		fd = true
	}
	return w, fd
}

func guardIsFD(s string) bool {
	if len(s) > 2 && s[0] == '{' && s[len(s)-1] == '}' {
		return guardIsName(s[1 : len(s)-1])
	}
	return s != "" && guardDigits(s)
}

// dq reads the inside of a double-quoted string (l.i just after the quote),
// or with heredoc the body of an unquoted here-document.
func (l *guardLexer) dq(w *guardWord, heredoc bool) {
	s := l.s
	w.lit("", true)
	for l.i < len(s) {
		c := s[l.i]
		switch {
		case c == '"' && !heredoc:
			l.i++
			return
		case c == '\\' && l.i+1 < len(s):
			n := s[l.i+1]
			if n == '\n' {
				l.i += 2
				continue
			}
			if n == '$' || n == '`' || n == '\\' || (n == '"' && !heredoc) {
				w.lit(string(n), true)
				l.i += 2
				continue
			}
			w.lit("\\", true)
			l.i++
		case c == '$':
			l.dollar(w, true)
		case c == '`':
			l.backtick(w, true)
		default:
			j := l.i + 1
			for j < len(s) && strings.IndexByte("\"\\$`", s[j]) < 0 {
				j++
			}
			w.lit(s[l.i:j], true)
			l.i = j
		}
	}
}

func (l *guardLexer) dollar(w *guardWord, inDQ bool) {
	s := l.s
	i := l.i
	if i+1 >= len(s) {
		w.lit("$", inDQ)
		l.i++
		return
	}
	switch c := s[i+1]; {
	case c == '(':
		end := guardScan(s, i+2, ')')
		inner := s[i+2 : end]
		if len(inner) >= 2 && inner[0] == '(' && inner[len(inner)-1] == ')' {
			w.add(guardArith, inner, inDQ)
		} else {
			w.add(guardSubst, inner, inDQ)
		}
		l.i = min(end+1, len(s))
	case c == '{':
		end := guardScan(s, i+2, '}')
		w.add(guardParam, s[i+2:end], inDQ)
		l.i = min(end+1, len(s))
	case c == '\'' && !inDQ:
		text, n := guardANSIC(s[i+2:])
		w.lit(text, true)
		l.i = i + 2 + n
	case c == '"' && !inDQ:
		l.i = i + 2
		l.dq(w, false)
	case c == '_' || guardAlpha(c):
		j := i + 2
		for j < len(s) && (s[j] == '_' || guardAlpha(s[j]) || guardDigit(s[j])) {
			j++
		}
		w.add(guardParam, s[i+1:j], inDQ)
		l.i = j
	case strings.IndexByte("0123456789@*#?$!-", c) >= 0:
		w.add(guardParam, s[i+1:i+2], inDQ)
		l.i = i + 2
	default:
		w.lit("$", inDQ)
		l.i++
	}
}

func (l *guardLexer) backtick(w *guardWord, quoted bool) {
	s := l.s
	j := l.i + 1
	var b strings.Builder
	for j < len(s) && s[j] != '`' {
		if s[j] == '\\' && j+1 < len(s) && strings.IndexByte("$`\\", s[j+1]) >= 0 {
			b.WriteByte(s[j+1])
			j += 2
			continue
		}
		b.WriteByte(s[j])
		j++
	}
	w.add(guardSubst, b.String(), quoted)
	l.i = min(j+1, len(s))
}

func (l *guardLexer) addWord(w guardWord) {
	if l.redir != "" {
		op := l.redir
		l.redir = ""
		switch op {
		case "<<", "<<-":
			delim, quoted := guardDelim(&w)
			l.heredocs = append(l.heredocs, guardHeredoc{delim: delim, strip: op == "<<-", quoted: quoted, cmd: len(l.cmds)})
			l.cur.extra = append(l.cur.extra, w)
		case "<<<":
			l.cur.stdin = append(l.cur.stdin, w)
		default:
			l.cur.extra = append(l.cur.extra, w)
		}
		return
	}
	if l.funcName {
		l.funcName = false
		return
	}
	if len(l.cur.words) == 0 && len(w.parts) == 1 && w.parts[0].kind == guardLit && !w.parts[0].quoted {
		switch w.parts[0].text {
		case "if", "while", "until", "{":
			l.nest++
			return
		case "then", "do", "else", "elif", "!":
			return
		case "fi", "done", "esac", "}":
			if l.nest > 0 {
				l.nest--
			}
			return
		case "function":
			l.funcName = true
			return
		case "for", "select", "case":
			l.nest++
		}
	}
	l.cur.words = append(l.cur.words, w)
}

func (l *guardLexer) end(sep int) {
	l.redir = ""
	l.funcName = false
	if len(l.cur.words) > 0 || len(l.cur.extra) > 0 || len(l.cur.stdin) > 0 {
		l.cur.pipe = l.pipeID
		l.cmds = append(l.cmds, l.cur)
	}
	l.cur = guardCmd{}
	switch sep {
	case guardSepPipe:
		if !l.piping {
			l.piping = true
			l.pipeNest = l.nest
		}
	case guardSepOpen:
		l.nest++
	default:
		// A list separator ends the pipeline, unless it is inside a compound
		// command that is itself a stage (`pgrep x | while read p; do ...`).
		if !(l.piping && l.nest > l.pipeNest) {
			l.piping = false
			l.pipeID++
		}
		if sep == guardSepClose && l.nest > 0 {
			l.nest--
		}
	}
}

func (l *guardLexer) readHeredocs() {
	hs := l.heredocs
	l.heredocs = nil
	for _, h := range hs {
		var body strings.Builder
		for l.i < len(l.s) {
			var line string
			if j := strings.IndexByte(l.s[l.i:], '\n'); j < 0 {
				line = l.s[l.i:]
				l.i = len(l.s)
			} else {
				line = l.s[l.i : l.i+j]
				l.i += j + 1
			}
			cmp := strings.TrimSuffix(line, "\r")
			if h.strip {
				cmp = strings.TrimLeft(cmp, "\t")
			}
			if cmp == h.delim {
				break
			}
			body.WriteString(line)
			body.WriteByte('\n')
		}
		var w guardWord
		if h.quoted {
			w.lit(body.String(), true)
		} else {
			sub := &guardLexer{s: body.String()}
			sub.dq(&w, true)
		}
		w.raw = "<<" + h.delim
		if h.cmd < len(l.cmds) {
			l.cmds[h.cmd].stdin = append(l.cmds[h.cmd].stdin, w)
		}
	}
}

func guardDelim(w *guardWord) (delim string, quoted bool) {
	var b strings.Builder
	for _, p := range w.parts {
		if p.quoted {
			quoted = true
		}
		if p.kind == guardLit {
			b.WriteString(p.text)
		} else {
			b.WriteString("$" + p.text)
		}
	}
	return b.String(), quoted || strings.Contains(w.raw, "\\")
}

// guardScan returns the index of the byte that closes a $( (closer ')') or
// a ${ (closer '}') opened just before j, or len(s) when none does. It skips
// quotes, nested substitutions and comments without recursion.
func guardScan(s string, j int, closer byte) int {
	stack := []byte{closer}
	for j < len(s) {
		c := s[j]
		top := stack[len(stack)-1]
		if top == '"' {
			switch c {
			case '\\':
				j += 2
				continue
			case '"':
				stack = stack[:len(stack)-1]
			case '`':
				j = guardSkipBacktick(s, j)
				continue
			case '$':
				if j+1 < len(s) && (s[j+1] == '(' || s[j+1] == '{') {
					stack = append(stack, guardCloser(s[j+1]))
					j += 2
					continue
				}
			}
			j++
			continue
		}
		switch c {
		case '\\':
			j += 2
			continue
		case '\'':
			k := strings.IndexByte(s[j+1:], '\'')
			if k < 0 {
				return len(s)
			}
			j += k + 2
			continue
		case '"':
			stack = append(stack, '"')
		case '`':
			j = guardSkipBacktick(s, j)
			continue
		case '$':
			if j+1 < len(s) && (s[j+1] == '(' || s[j+1] == '{') {
				stack = append(stack, guardCloser(s[j+1]))
				j += 2
				continue
			}
		case '(':
			if top == ')' {
				stack = append(stack, ')')
			}
		case ')', '}':
			if c == top {
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return j
				}
			}
		case '#':
			if top == ')' && (j == 0 || strings.IndexByte(" \t\n;|&(", s[j-1]) >= 0) {
				k := strings.IndexByte(s[j:], '\n')
				if k < 0 {
					return len(s)
				}
				j += k
				continue
			}
		}
		j++
	}
	return len(s)
}

func guardCloser(open byte) byte {
	if open == '(' {
		return ')'
	}
	return '}'
}

func guardSkipBacktick(s string, j int) int {
	for k := j + 1; k < len(s); k++ {
		switch s[k] {
		case '\\':
			k++
		case '`':
			return k + 1
		}
	}
	return len(s)
}

// guardANSIC decodes the inside of $'...' and returns it with the number of
// bytes read, closing quote included.
func guardANSIC(s string) (string, int) {
	var b strings.Builder
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '\'' {
			return b.String(), i + 1
		}
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		i++
		e := s[i]
		i++
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'v':
			b.WriteByte(11)
		case 'c':
			if i < len(s) {
				b.WriteByte(s[i] & 0x1f)
				i++
			}
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			n := 0
			for n < max && i+n < len(s) && guardHex(s[i+n]) {
				n++
			}
			if n == 0 {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			v, _ := strconv.ParseUint(s[i:i+n], 16, 32)
			i += n
			if e == 'x' {
				b.WriteByte(byte(v))
			} else if utf8.ValidRune(rune(v)) {
				b.WriteRune(rune(v))
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n := 1
			for n < 3 && i-1+n < len(s) && s[i-1+n] >= '0' && s[i-1+n] <= '7' {
				n++
			}
			v, _ := strconv.ParseUint(s[i-1:i-1+n], 8, 16)
			b.WriteByte(byte(v))
			i += n - 1
		default:
			b.WriteByte(e)
		}
	}
	return b.String(), i
}

// ---------------------------------------------------------------------------
// Expansion: words into arguments.

// guardArg is one argument as the program would see it, as far as the guard
// can tell.
type guardArg struct {
	s     string // the value; parts the guard cannot know keep their source text
	known bool
	ours  bool // unknown, but derived from $TMUX
	word  *guardWord
}

var guardTmuxVarRe = regexp.MustCompile(`\$\{?TMUX\b|socket_path`)

// guardMentionsTmuxVar reports whether shell text reads $TMUX (or asks tmux
// for its socket path): a value it prints names the agent's server.
func guardMentionsTmuxVar(text string) bool {
	return (strings.Contains(text, "TMUX") || strings.Contains(text, "socket_path")) && guardTmuxVarRe.MatchString(text)
}

func (st *guardState) expandWord(w *guardWord, sc *guardScope) []guardArg {
	if len(w.parts) == 0 {
		return nil
	}
	// An unquoted $VAR alone is split into fields.
	if len(w.parts) == 1 && w.parts[0].kind == guardParam && !w.parts[0].quoted {
		if v := st.param(w.parts[0].text, sc); v.known {
			var out []guardArg
			for _, f := range strings.Fields(v.s) {
				out = append(out, guardArg{s: f, known: true, word: w})
			}
			return out
		}
	}
	a := st.expandOne(w, sc)
	if a.known {
		if esc, ok := guardBraceForm(w); ok {
			var out []guardArg
			for _, s := range guardBraceExpand(esc, nil) {
				if s != "" {
					out = append(out, guardArg{s: s, known: true, word: w})
				}
			}
			return out
		}
	}
	return []guardArg{a}
}

// expandOne expands a word into one string, without splitting.
func (st *guardState) expandOne(w *guardWord, sc *guardScope) guardArg {
	a := guardArg{known: true, word: w}
	var b strings.Builder
	for _, p := range w.parts {
		switch p.kind {
		case guardLit:
			b.WriteString(p.text)
		case guardParam:
			v := st.param(p.text, sc)
			b.WriteString(v.s)
			a.known = a.known && v.known
			a.ours = a.ours || v.ours
		case guardSubst:
			if guardIsIDU(p.text) {
				b.WriteString(st.uid)
				continue
			}
			b.WriteString("$(" + p.text + ")")
			a.known = false
			if guardMentionsTmuxVar(p.text) {
				a.ours = true
			}
		case guardArith:
			b.WriteString("$(" + p.text + ")")
			a.known = false
		}
	}
	a.s = b.String()
	return a
}

func guardIsIDU(text string) bool {
	switch strings.Join(strings.Fields(text), " ") {
	case "id -u", "id -ru", "id -ur", "id -u -r", "id -r -u":
		return true
	}
	return false
}

// param expands the inside of ${...} (or a bare $NAME).
func (st *guardState) param(text string, sc *guardScope) guardVal {
	unknown := guardVal{s: "${" + text + "}"}
	n := 0
	for n < len(text) && (text[n] == '_' || guardAlpha(text[n]) || guardDigit(text[n])) {
		n++
	}
	if n == 0 || guardDigit(text[0]) {
		return unknown // special and positional parameters, ${#x}, ${!x}
	}
	name, op := text[:n], text[n:]
	v := st.lookup(sc, name)
	unknown.ours = v.ours || name == "TMUX"
	unknown.tainted = v.tainted
	switch {
	case op == "":
		return v
	case op == "%%,*" || op == "%,*":
		if v.known {
			v.s, _, _ = strings.Cut(v.s, ",")
			return v
		}
	case strings.HasPrefix(op, ":-") || strings.HasPrefix(op, "-") ||
		strings.HasPrefix(op, ":=") || strings.HasPrefix(op, "="):
		def := strings.TrimPrefix(op, ":")[1:]
		if !v.known {
			return unknown
		}
		if v.s != "" {
			return v
		}
		if strings.ContainsAny(def, "$`") {
			return unknown
		}
		return guardVal{known: true, s: strings.Trim(def, `"'`)}
	}
	return unknown
}

// guardBraceForm returns the word in a form for brace expansion (quoted
// braces and commas escaped with a backslash) when it has an unquoted brace.
func guardBraceForm(w *guardWord) (string, bool) {
	var b strings.Builder
	brace := false
	for _, p := range w.parts {
		if p.kind != guardLit {
			return "", false
		}
		for i := 0; i < len(p.text); i++ {
			c := p.text[i]
			switch {
			case c == '\\', p.quoted && (c == '{' || c == '}' || c == ','):
				b.WriteByte('\\')
			case c == '{':
				brace = true
			}
			b.WriteByte(c)
		}
	}
	return b.String(), brace
}

func guardBraceExpand(s string, out []string) []string {
	if len(out) >= guardMaxBrace {
		return out
	}
	open, close, commas := guardBraceGroup(s)
	if open < 0 {
		return append(out, guardUnescape(s))
	}
	pre, post := s[:open], s[close+1:]
	start := open + 1
	for _, c := range append(commas, close) {
		out = guardBraceExpand(pre+s[start:c]+post, out)
		start = c + 1
	}
	return out
}

// guardBraceGroup finds the first {a,b} group: its braces and its commas.
func guardBraceGroup(s string) (open, close int, commas []int) {
	open, depth := -1, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open, commas = i, nil
			}
			depth++
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		case '}':
			if depth == 0 {
				continue
			}
			depth--
			if depth == 0 {
				if len(commas) > 0 {
					return open, i, commas
				}
				open = -1
			}
		}
	}
	return -1, -1, nil
}

func guardUnescape(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// guardAssignment splits a NAME=value word.
func guardAssignment(w *guardWord) (name string, value guardWord, ok bool) {
	if len(w.parts) == 0 || w.parts[0].kind != guardLit || w.parts[0].quoted {
		return "", value, false
	}
	first := w.parts[0].text
	eq := strings.IndexByte(first, '=')
	if eq <= 0 {
		return "", value, false
	}
	name = strings.TrimSuffix(first[:eq], "+")
	if !guardIsName(name) {
		return "", value, false
	}
	value.lit(first[eq+1:], false)
	value.parts = append(value.parts, w.parts[1:]...)
	value.raw = w.raw
	return name, value, true
}

// ---------------------------------------------------------------------------
// Commands.

// guardPipe is what earlier stages of a pipeline feed the next one.
type guardPipe struct {
	id      int
	selects bool   // an earlier stage prints pids of the tmux server
	hasEcho bool   // the previous stage prints known text (echo, printf, cat <<EOF)
	echo    string // that text
}

func (st *guardState) script(src string, sc *guardScope) string {
	if sc.depth > guardMaxDepth || st.budget <= 0 {
		return guardCrude(src)
	}
	st.budget -= len(src) + 64
	cmds := guardLex(src)
	pl := &guardPipe{id: -1}
	for i := range cmds {
		c := &cmds[i]
		if c.pipe != pl.id {
			pl = &guardPipe{id: c.pipe}
		}
		if r := st.simple(c, sc, pl); r != "" {
			return r
		}
	}
	return ""
}

func (st *guardState) simple(c *guardCmd, sc *guardScope, pl *guardPipe) string {
	// Every substitution runs, whatever the command is.
	for _, ws := range [][]guardWord{c.words, c.extra, c.stdin} {
		for i := range ws {
			if r := st.substs(&ws[i], sc); r != "" {
				return r
			}
		}
	}
	words := c.words
	cs := sc.with()
	var assigned []string
	for len(words) > 0 {
		name, value, ok := guardAssignment(&words[0])
		if !ok {
			break
		}
		v := st.expandOne(&value, sc)
		cs.set(name, guardVal{known: v.known, s: v.s, ours: v.ours, tainted: st.wordSelects(&value, sc)})
		assigned = append(assigned, name)
		words = words[1:]
	}
	if len(words) == 0 {
		// Only assignments: they stay for the commands that follow.
		for _, name := range assigned {
			if v, ok := cs.env[name]; ok {
				sc.set(name, v)
			}
		}
		pl.hasEcho = false
		return ""
	}
	var argv []guardArg
	for i := range words {
		argv = append(argv, st.expandWord(&words[i], sc)...)
	}
	return st.run(argv, c, cs, sc, pl)
}

// substs checks the substitutions inside a word, which run before the
// command does.
func (st *guardState) substs(w *guardWord, sc *guardScope) string {
	for _, p := range w.parts {
		switch p.kind {
		case guardSubst:
			if r := st.script(p.text, sc.child()); r != "" {
				return r
			}
		case guardParam:
			if strings.ContainsAny(p.text, "$`") {
				if sc.depth > guardMaxDepth || st.budget <= 0 {
					return guardCrude(p.text)
				}
				st.budget -= len(p.text) + 64
				var inner guardWord
				(&guardLexer{s: p.text}).dq(&inner, true)
				if r := st.substs(&inner, sc.child()); r != "" {
					return r
				}
			}
		}
	}
	return ""
}

// run runs one expanded command: wrappers first, then the program.
func (st *guardState) run(argv []guardArg, c *guardCmd, cs, sc *guardScope, pl *guardPipe) string {
	name, args := st.unwrap(argv, cs, pl)
	if name == "" {
		pl.hasEcho = false
		return ""
	}
	r := st.dispatch(name, args, c, cs, sc, pl)
	st.track(name, args, c, cs, pl)
	return r
}

func (st *guardState) progName(a guardArg) string {
	if !a.known {
		if strings.Contains(strings.ToLower(a.s), "tmux") {
			return "tmux" // $(which tmux), "$TMUX_BIN"
		}
		return ""
	}
	base := path.Base(a.s)
	if strings.ContainsAny(base, "*?[") {
		if ok, _ := path.Match(base, "tmux"); ok {
			return "tmux"
		}
	}
	if strings.EqualFold(base, "tmux") {
		return "tmux"
	}
	return base
}

// unwrap strips leading wrappers (sudo, env, nice, timeout, xargs...) and
// returns the program that runs and its arguments. Wrappers that change the
// environment change cs.
func (st *guardState) unwrap(argv []guardArg, cs *guardScope, pl *guardPipe) (string, []guardArg) {
	for hops := 0; len(argv) > 0 && hops < 64; hops++ {
		name := st.progName(argv[0])
		args := argv[1:]
		switch name {
		case "sudo":
			argv = guardSkipSudo(args, cs, "ugpCDrtTUR", []string{"user", "group", "prompt", "close-from", "chdir", "role", "type", "command-timeout", "other-user", "chroot", "host"})
		case "doas":
			argv = guardSkipSudo(args, cs, "uC", nil)
		case "env":
			argv = st.skipEnv(args, cs)
		case "command":
			for _, a := range args {
				if a.s == "-v" || a.s == "-V" {
					return "", nil
				}
			}
			argv = guardSkipOpts(args, "", nil)
		case "builtin", "nohup", "unbuffer", "busybox", "chronic", "eatmydata", "fakeroot", "torsocks", "proxychains", "proxychains4", "nocache", "caffeinate":
			argv = guardSkipOpts(args, "", nil)
		case "exec":
			argv = guardSkipOpts(args, "a", nil)
		case "time":
			argv = guardSkipOpts(args, "fo", []string{"format", "output"})
		case "setsid":
			argv = guardSkipOpts(args, "", nil)
		case "stdbuf":
			argv = guardSkipOpts(args, "ioe", []string{"input", "output", "error"})
		case "nice":
			argv = guardSkipNice(args)
		case "ionice":
			for _, a := range args {
				if a.s == "-p" || a.s == "-P" || a.s == "-u" {
					return "", nil
				}
			}
			argv = guardSkipOpts(args, "cn", []string{"class", "classdata"})
		case "timeout":
			argv = guardSkipOpts(args, "sk", []string{"signal", "kill-after"})
			if len(argv) > 0 {
				argv = argv[1:] // the duration
			}
		case "taskset":
			for _, a := range args {
				if strings.HasPrefix(a.s, "-") && strings.ContainsRune(a.s, 'p') && !strings.HasPrefix(a.s, "--") {
					return "", nil
				}
			}
			argv = guardSkipOpts(args, "", nil)
			if len(argv) > 0 {
				argv = argv[1:] // the cpu mask or list
			}
		case "chrt":
			argv = guardSkipOpts(args, "TPD", []string{"sched-runtime", "sched-period", "sched-deadline"})
			if len(argv) > 0 {
				argv = argv[1:] // the priority
			}
		case "xargs":
			argv = guardSkipXargs(args, pl)
		default:
			return name, args
		}
	}
	return "", nil
}

// guardSkipOpts skips getopt-style options: vals are the short options that
// take a value and longVals the long ones (all others take none). It returns
// what follows.
func guardSkipOpts(args []guardArg, vals string, longVals []string) []guardArg {
	i := 0
	for i < len(args) {
		s := args[i].s
		if s == "--" {
			return args[i+1:]
		}
		if len(s) < 2 || s[0] != '-' {
			break
		}
		if strings.HasPrefix(s, "--") {
			name, _, hasVal := strings.Cut(s[2:], "=")
			i++
			if !hasVal && guardIn(name, longVals) {
				i++
			}
			continue
		}
		i++
		for j := 1; j < len(s); j++ {
			if strings.IndexByte(vals, s[j]) >= 0 {
				if j+1 == len(s) {
					i++
				}
				break
			}
		}
	}
	return args[min(i, len(args)):]
}

func guardSkipSudo(args []guardArg, cs *guardScope, vals string, longVals []string) []guardArg {
	for _, a := range args {
		switch a.s {
		case "-e", "--edit", "-l", "--list", "-v", "--validate", "-V", "--version", "-K", "--remove-timestamp", "--help":
			return nil
		}
		if len(a.s) < 2 || a.s[0] != '-' {
			break
		}
	}
	rest := guardSkipOpts(args, vals, longVals)
	for len(rest) > 0 {
		name, val, ok := guardEnvAssign(rest[0])
		if !ok {
			break
		}
		cs.set(name, val)
		rest = rest[1:]
	}
	return rest
}

func guardSkipNice(args []guardArg) []guardArg {
	i := 0
	for i < len(args) {
		s := args[i].s
		switch {
		case s == "--":
			return args[i+1:]
		case s == "-n" || s == "--adjustment":
			i += 2
		case strings.HasPrefix(s, "-n") || strings.HasPrefix(s, "--adjustment="),
			len(s) > 1 && s[0] == '-' && guardDigits(strings.TrimLeft(s[1:], "+-")):
			i++
		default:
			return args[i:]
		}
	}
	return nil
}

func guardSkipXargs(args []guardArg, pl *guardPipe) []guardArg {
	i := 0
	for i < len(args) {
		s := args[i].s
		if s == "--" {
			i++
			break
		}
		if len(s) < 2 || s[0] != '-' {
			break
		}
		i++
		if strings.HasPrefix(s, "--") {
			name, _, hasVal := strings.Cut(s[2:], "=")
			if !hasVal && guardIn(name, []string{"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"}) {
				i++
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			if strings.IndexByte("adEILnPs", s[j]) >= 0 {
				if j+1 == len(s) {
					i++
				}
				break
			}
			if strings.IndexByte("eil", s[j]) >= 0 {
				break // optional value, attached
			}
		}
	}
	rest := append([]guardArg(nil), args[min(i, len(args)):]...)
	if len(rest) == 0 {
		rest = []guardArg{{s: "echo", known: true}}
	}
	if pl != nil && pl.hasEcho {
		for _, f := range strings.Fields(pl.echo) {
			rest = append(rest, guardArg{s: f, known: true})
		}
	}
	return rest
}

func (st *guardState) skipEnv(args []guardArg, cs *guardScope) []guardArg {
	i := 0
	for i < len(args) {
		a := args[i]
		s := a.s
		switch {
		case s == "-" || s == "-i" || s == "--ignore-environment":
			cs.clear()
			i++
			continue
		case s == "--":
			i++
		case strings.HasPrefix(s, "--"):
			name, val, hasVal := strings.Cut(s[2:], "=")
			takes := guardIn(name, []string{"unset", "chdir", "split-string"})
			if takes && !hasVal && i+1 < len(args) {
				i++
				val = args[i].s
			}
			i++
			switch name {
			case "unset":
				cs.unset(val)
			case "split-string":
				return append(st.splitString(val, cs), args[i:]...)
			}
			continue
		case len(s) > 1 && s[0] == '-':
			i++
			for j := 1; j < len(s); j++ {
				switch s[j] {
				case 'i':
					cs.clear()
					continue
				case 'u', 'C', 'S', 'P':
				default:
					continue
				}
				val := s[j+1:]
				if val == "" && i < len(args) {
					val = args[i].s
					i++
				}
				switch s[j] {
				case 'u':
					cs.unset(val)
				case 'S':
					return append(st.splitString(val, cs), args[i:]...)
				}
				break
			}
			continue
		}
		if name, val, ok := guardEnvAssign(a); ok {
			cs.set(name, val)
			i++
			continue
		}
		break
	}
	return args[min(i, len(args)):]
}

// splitString splits env -S's string into arguments.
func (st *guardState) splitString(s string, cs *guardScope) []guardArg {
	st.budget -= len(s) + 64
	if st.budget <= 0 {
		return nil
	}
	var out []guardArg
	for _, c := range guardLex(s) {
		for i := range c.words {
			out = append(out, st.expandWord(&c.words[i], cs)...)
		}
	}
	return out
}

func guardEnvAssign(a guardArg) (string, guardVal, bool) {
	name, val, ok := strings.Cut(a.s, "=")
	if !ok || !guardIsName(name) {
		return "", guardVal{}, false
	}
	return name, guardVal{known: a.known, s: val, ours: a.ours}, true
}

// dispatch decides for the program that runs.
func (st *guardState) dispatch(name string, args []guardArg, c *guardCmd, cs, sc *guardScope, pl *guardPipe) string {
	show := guardShow(name, args)
	switch name {
	case "tmux":
		return st.tmux(args, cs, show)
	case "kill":
		return st.kill(args, cs, pl, show)
	case "pkill", "killall", "skill":
		if why := st.procMatch(name, args); why != "" {
			return guardRefuse(show + ": " + why)
		}
		return ""
	case "killall5":
		return guardRefuse(show + ": killall5 signals every process")
	case "eval":
		text := guardJoin(args)
		if r := st.script(text, cs.child()); r != "" {
			return r
		}
		for _, a := range args {
			if out, ok := st.echoOutput(a, cs); ok {
				if r := st.script(out, cs.child()); r != "" {
					return r
				}
			}
		}
		return ""
	case "watch":
		return st.watch(args, c, cs, sc, pl)
	case "su", "runuser", "script":
		for i, a := range args {
			s := a.s
			switch {
			case strings.HasPrefix(s, "--command=") || strings.HasPrefix(s, "--session-command="):
				_, v, _ := strings.Cut(s, "=")
				return st.script(v, cs.child())
			case s == "--command" || s == "--session-command" ||
				len(s) > 1 && s[0] == '-' && s[1] != '-' && s[len(s)-1] == 'c' && guardLetters(s[1:]):
				if i+1 < len(args) {
					return st.script(args[i+1].s, cs.child())
				}
			}
		}
		return ""
	case "flock":
		return st.flock(args, c, cs, sc, pl)
	case "find":
		return st.find(args, c, cs, sc)
	case "for", "select":
		if len(args) > 0 && guardIsName(args[0].s) {
			v := guardVal{s: "${" + args[0].s + "}"}
			for _, a := range args[1:] {
				if a.word != nil && st.wordSelects(a.word, cs) {
					v.tainted = true
				}
			}
			sc.set(args[0].s, v)
		}
		return ""
	case "unset":
		for _, a := range args {
			if guardIsName(a.s) {
				sc.unset(a.s)
			}
		}
		return ""
	case "export", "declare", "typeset", "local", "readonly":
		for _, a := range args {
			if n, v, ok := guardEnvAssign(a); ok {
				if a.word != nil && st.wordSelects(a.word, cs) {
					v.tainted = true
				}
				sc.set(n, v)
			}
		}
		return ""
	}
	if guardShells[name] {
		return st.shell(args, c, cs, pl)
	}
	if flags := guardInterpFlags(name); flags != "" {
		return st.interp(name, flags, args, c, cs, pl)
	}
	return ""
}

var guardShells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true,
	"yash": true, "posh": true, "fish": true, "rbash": true, "ksh93": true, "oksh": true, "loksh": true, "pdksh": true,
}

// track records what a pipeline stage feeds the next one.
func (st *guardState) track(name string, args []guardArg, c *guardCmd, cs *guardScope, pl *guardPipe) {
	if !pl.selects && st.selects(name, args, cs) {
		pl.selects = true
	}
	pl.hasEcho, pl.echo = false, ""
	switch name {
	case "echo", "printf":
		pl.hasEcho, pl.echo = true, guardEchoText(name, args)
	case "cat":
		if len(c.stdin) > 0 && len(guardSkipOpts(args, "", nil)) == 0 {
			pl.hasEcho, pl.echo = true, st.expandOne(&c.stdin[0], cs).s
		}
	}
}

func guardEchoText(name string, args []guardArg) string {
	if name == "echo" {
		i := 0
		for i < len(args) && len(args[i].s) > 1 && args[i].s[0] == '-' && strings.Trim(args[i].s[1:], "neE") == "" {
			i++
		}
		var parts []string
		for _, a := range args[i:] {
			parts = append(parts, a.s)
		}
		return strings.ReplaceAll(strings.Join(parts, " "), `\n`, "\n") + "\n"
	}
	i := 0
	if i < len(args) && args[i].s == "--" {
		i++
	}
	if i >= len(args) || args[i].s == "-v" {
		return ""
	}
	format := strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`).Replace(args[i].s)
	rest := args[i+1:]
	var b strings.Builder
	for round := 0; round <= len(args); round++ {
		used := 0
		for j := 0; j < len(format); j++ {
			if format[j] == '%' && j+1 < len(format) {
				if format[j+1] == '%' {
					b.WriteByte('%')
					j++
					continue
				}
				k := j + 1
				for k < len(format) && strings.IndexByte("-+ #0123456789.", format[k]) >= 0 {
					k++
				}
				if k < len(format) {
					if len(rest) > 0 {
						b.WriteString(rest[0].s)
						rest = rest[1:]
						used++
					}
					j = k
					continue
				}
			}
			b.WriteByte(format[j])
		}
		if used == 0 || len(rest) == 0 {
			break
		}
	}
	return b.String()
}

// echoOutput is what a $(echo ...) or $(printf ...) argument prints.
func (st *guardState) echoOutput(a guardArg, cs *guardScope) (string, bool) {
	if a.word == nil {
		return "", false
	}
	text, n := "", 0
	for _, p := range a.word.parts {
		switch {
		case p.kind == guardSubst:
			text = p.text
			n++
		case p.kind != guardLit || p.text != "":
			return "", false
		}
	}
	if n != 1 {
		return "", false
	}
	st.budget -= len(text) + 64
	if st.budget <= 0 || cs.depth > guardMaxDepth {
		return "", false
	}
	cmds := guardLex(text)
	if len(cmds) != 1 {
		return "", false
	}
	sub := cs.child()
	var argv []guardArg
	for i := range cmds[0].words {
		argv = append(argv, st.expandWord(&cmds[0].words[i], sub)...)
	}
	name, args := st.unwrap(argv, sub, nil)
	if name != "echo" && name != "printf" {
		return "", false
	}
	return guardEchoText(name, args), true
}

// shell handles sh, bash and the like: -c strings, and commands fed on stdin.
func (st *guardState) shell(args []guardArg, c *guardCmd, cs *guardScope, pl *guardPipe) string {
	hasC, hasS := false, false
	i := 0
	for i < len(args) {
		s := args[i].s
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
				i++
			case "--command":
				hasC = true
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			switch s[j] {
			case 'c':
				hasC = true
			case 's':
				hasS = true
			case 'o', 'O':
				i++
			}
		}
	}
	if hasC {
		if i < len(args) {
			return st.script(args[i].s, cs.child())
		}
		return ""
	}
	if i < len(args) && !hasS {
		return "" // runs a script file the guard cannot see
	}
	return st.stdinText(c, cs, pl, st.script)
}

// stdinText checks what a command reads on its standard input, as a program
// for check.
func (st *guardState) stdinText(c *guardCmd, cs *guardScope, pl *guardPipe, check func(string, *guardScope) string) string {
	for i := range c.stdin {
		if r := check(st.expandOne(&c.stdin[i], cs).s, cs.child()); r != "" {
			return r
		}
	}
	if pl.hasEcho {
		return check(pl.echo, cs.child())
	}
	return ""
}

func guardInterpFlags(name string) string {
	switch {
	case strings.HasPrefix(name, "python"), strings.HasPrefix(name, "pypy"):
		return "c"
	case name == "perl" || strings.HasPrefix(name, "perl5"):
		return "eE"
	case name == "ruby" || strings.HasPrefix(name, "ruby3"):
		return "e"
	case name == "node" || name == "nodejs" || name == "bun":
		return "ep"
	case name == "php" || strings.HasPrefix(name, "php8"):
		return "r"
	}
	return ""
}

// interp handles inline code of python, perl, ruby, node and php: the shell
// commands it would run are in its string literals.
func (st *guardState) interp(name, flags string, args []guardArg, c *guardCmd, cs *guardScope, pl *guardPipe) string {
	for i := 0; i < len(args); i++ {
		s := args[i].s
		if s == "-" || s == "--" {
			break
		}
		if (name == "node" || name == "nodejs" || name == "bun") && (s == "--eval" || s == "--print") {
			if i+1 < len(args) {
				return st.code(args[i+1].s, cs)
			}
			return ""
		}
		if v, ok := strings.CutPrefix(s, "--eval="); ok {
			return st.code(v, cs)
		}
		if len(s) > 1 && s[0] == '-' && s[1] != '-' {
			for j := 1; j < len(s); j++ {
				if strings.IndexByte(flags, s[j]) < 0 {
					continue
				}
				if j+1 < len(s) {
					return st.code(s[j+1:], cs)
				}
				if i+1 < len(args) {
					return st.code(args[i+1].s, cs)
				}
				return ""
			}
			continue
		}
		if !strings.HasPrefix(s, "-") {
			return "" // a script file
		}
	}
	return st.stdinText(c, cs, pl, func(code string, sc *guardScope) string { return st.code(code, sc) })
}

func (st *guardState) code(code string, cs *guardScope) string {
	if cs.depth > guardMaxDepth || st.budget <= 0 {
		return guardCrude(code)
	}
	st.budget -= len(code) + 64
	lits := guardStringLits(code)
	for _, l := range lits {
		if r := st.script(l, cs.child()); r != "" {
			return r
		}
	}
	if len(lits) > 1 {
		// ["tmux", "kill-server"] as an argument list.
		return st.script(strings.Join(lits, " "), cs.child())
	}
	return ""
}

// guardStringLits returns the string literals of a program in a C-like or
// Python-like language ('...', "...", `...`, triple quotes).
func guardStringLits(code string) []string {
	var lits []string
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
		lits = append(lits, b.String())
		i = j
	}
	return lits
}

func (st *guardState) watch(args []guardArg, c *guardCmd, cs, sc *guardScope, pl *guardPipe) string {
	exec := false
	i := 0
	for i < len(args) {
		s := args[i].s
		if s == "--" {
			i++
			break
		}
		if len(s) < 2 || s[0] != '-' {
			break
		}
		i++
		if strings.HasPrefix(s, "--") {
			name, _, hasVal := strings.Cut(s[2:], "=")
			if name == "exec" {
				exec = true
			}
			if !hasVal && guardIn(name, []string{"interval", "equexit", "shotsdir"}) {
				i++
			}
			continue
		}
		for j := 1; j < len(s); j++ {
			if s[j] == 'x' {
				exec = true
			}
			if s[j] == 'n' || s[j] == 'q' {
				if j+1 == len(s) {
					i++
				}
				break
			}
		}
	}
	rest := args[min(i, len(args)):]
	if exec {
		return st.run(rest, c, cs, sc, pl)
	}
	return st.script(guardJoin(rest), cs.child())
}

func (st *guardState) flock(args []guardArg, c *guardCmd, cs, sc *guardScope, pl *guardPipe) string {
	i := 0
	for i < len(args) {
		s := args[i].s
		if s == "--" {
			i++
			break
		}
		if len(s) < 2 || s[0] != '-' {
			break
		}
		if s == "-c" || s == "--command" {
			if i+1 < len(args) {
				return st.script(args[i+1].s, cs.child())
			}
			return ""
		}
		if s == "-w" || s == "-E" || s == "--timeout" || s == "--wait" || s == "--conflict-exit-code" {
			i++
		}
		i++
	}
	i++ // the lock file
	if i < len(args) && (args[i].s == "-c" || args[i].s == "--command") {
		if i+1 < len(args) {
			return st.script(args[i+1].s, cs.child())
		}
		return ""
	}
	if i < len(args) {
		return st.run(args[i:], c, cs, sc, pl)
	}
	return ""
}

// find runs the commands of -exec, -execdir, -ok and -okdir.
func (st *guardState) find(args []guardArg, c *guardCmd, cs, sc *guardScope) string {
	var execs [][]guardArg
	mentions := false
	for i := 0; i < len(args); i++ {
		switch args[i].s {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j].s != ";" && args[j].s != "+" {
				j++
			}
			execs = append(execs, args[i+1:j])
			i = j
		default:
			if strings.Contains(strings.ToLower(args[i].s), "tmux") {
				mentions = true
			}
		}
	}
	for _, e := range execs {
		if r := st.run(e, c, cs, sc, &guardPipe{id: -2, selects: mentions}); r != "" {
			return r
		}
	}
	return ""
}

// ---------------------------------------------------------------------------
// tmux

// guardServer is the tmux server a tmux command talks to.
type guardServer struct {
	known bool
	path  string
	ours  bool
}

func (st *guardState) tmux(args []guardArg, cs *guardScope, show string) string {
	srv, shellCmd, rest, ok := st.tmuxGlobals(args, cs)
	if !ok {
		return ""
	}
	if shellCmd != nil {
		if r := st.script(shellCmd.s, cs.child()); r != "" {
			return r
		}
	}
	return st.tmuxCommands(guardTmuxSplit(rest), srv, cs, show)
}

// tmuxGlobals parses tmux's global flags. ok is false when tmux would print
// its usage or version and exit.
func (st *guardState) tmuxGlobals(args []guardArg, cs *guardScope) (srv guardServer, shellCmd *guardArg, rest []guardArg, ok bool) {
	var label, spath *guardArg
	i := 0
flags:
	for i < len(args) {
		a := args[i]
		s := a.s
		if s == "--" {
			i++
			break
		}
		if len(s) < 2 || s[0] != '-' {
			break
		}
		next := false
		for j := 1; j < len(s); j++ {
			switch c := s[j]; c {
			case 'L', 'S', 'f', 'c', 'T':
				var v guardArg
				switch {
				case j+1 < len(s):
					v = guardArg{s: s[j+1:], known: a.known, ours: a.ours, word: a.word}
				case i+1 < len(args):
					v = args[i+1]
					next = true
				default:
					return srv, nil, nil, false
				}
				switch c {
				case 'L':
					label = &v
				case 'S':
					spath = &v
				case 'c':
					shellCmd = &v
				}
				j = len(s)
			case '2', 'C', 'D', 'd', 'h', 'l', 'N', 'q', 'u', 'U', 'v':
			case 'V':
				return srv, nil, nil, false
			default:
				if !a.known {
					break flags
				}
				return srv, nil, nil, false
			}
		}
		i++
		if next {
			i++
		}
	}
	return st.resolveServer(label, spath, cs), shellCmd, args[min(i, len(args)):], true
}

// resolveServer finds the socket as tmux does: -S, else -L, else $TMUX's
// socket, else the default socket.
func (st *guardState) resolveServer(label, spath *guardArg, cs *guardScope) guardServer {
	if spath != nil {
		if !spath.known {
			return guardServer{path: spath.s, ours: spath.ours}
		}
		return guardServer{known: true, path: path.Clean(spath.s), ours: st.sameSocket(spath.s)}
	}
	if label == nil {
		t := st.lookup(cs, "TMUX")
		if !t.known {
			return guardServer{path: t.s, ours: t.ours}
		}
		if t.s != "" {
			p, _, _ := strings.Cut(t.s, ",")
			return guardServer{known: true, path: path.Clean(p), ours: st.sameSocket(p)}
		}
		label = &guardArg{s: "default", known: true}
	}
	if !label.known {
		return guardServer{path: label.s, ours: label.ours}
	}
	// tmux resolves the directory's symlinks (/tmp may be /private/tmp), so
	// the same label under tmux-<uid> counts as the same server.
	loose := label.s == path.Base(st.ours) && path.Base(path.Dir(st.ours)) == "tmux-"+st.uid
	dir := st.lookup(cs, "TMUX_TMPDIR")
	if !dir.known {
		return guardServer{path: dir.s + "/tmux-" + st.uid + "/" + label.s, ours: loose || dir.ours}
	}
	d := dir.s
	if d == "" {
		d = "/tmp"
	}
	p := path.Clean(d + "/tmux-" + st.uid + "/" + label.s)
	return guardServer{known: true, path: p, ours: loose || st.sameSocket(p)}
}

func (st *guardState) sameSocket(p string) bool {
	if p == "" {
		return false
	}
	o := st.ours
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return strings.HasSuffix(o, path.Clean("/"+rest))
	}
	c := path.Clean(p)
	if c == o {
		return true
	}
	if !path.IsAbs(c) {
		return path.Base(c) == path.Base(o) // relative to a directory the guard does not know
	}
	return guardPathSuffix(o, c) || guardPathSuffix(c, o)
}

func guardPathSuffix(long, short string) bool {
	return len(long) > len(short) && strings.HasSuffix(long, short) && strings.Count(short, "/") >= 3
}

// guardTmuxSplit splits tmux's arguments into commands as tmux does: an
// argument ending in ';' ends a command, unless it ends in '\;'.
func guardTmuxSplit(args []guardArg) [][]guardArg {
	var out [][]guardArg
	var cur []guardArg
	for _, a := range args {
		end := false
		if s, ok := strings.CutSuffix(a.s, ";"); ok {
			if t, ok := strings.CutSuffix(s, "\\"); ok {
				s = t + ";"
			} else {
				end = true
			}
			a.s = s
		}
		if !end || a.s != "" {
			cur = append(cur, a)
		}
		if end {
			out = append(out, cur)
			cur = nil
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func (st *guardState) tmuxCommands(cmds [][]guardArg, srv guardServer, cs *guardScope, show string) string {
	for _, cmd := range cmds {
		if len(cmd) == 0 || !cmd[0].known {
			continue
		}
		name := guardTmuxCommand(cmd[0].s)
		args := cmd[1:]
		var r string
		switch name {
		case "kill-server":
			if srv.ours {
				d := show
				if cmd[0].s != name {
					d += fmt.Sprintf("; tmux reads %q as kill-server", cmd[0].s)
				}
				return guardRefuse(d)
			}
		case "run-shell":
			f, pos, ok := guardTmuxOpts(args, "bd:Ct:c:Es:")
			if ok && len(pos) > 0 {
				if f['C'] {
					r = st.tmuxString(pos[0].s, srv, cs, show)
				} else {
					r = st.script(pos[0].s, st.inServer(cs, srv))
				}
			}
		case "if-shell":
			f, pos, ok := guardTmuxOpts(args, "bFt:")
			if ok && len(pos) > 0 {
				if !f['F'] {
					r = st.script(pos[0].s, st.inServer(cs, srv))
				}
				for _, p := range pos[1:min(3, len(pos))] {
					if r == "" {
						r = st.tmuxString(p.s, srv, cs, show)
					}
				}
			}
		case "confirm-before":
			if _, pos, ok := guardTmuxOpts(args, "bc:p:t:y"); ok && len(pos) > 0 {
				r = st.tmuxString(pos[0].s, srv, cs, show)
			}
		case "set-hook":
			if f, pos, ok := guardTmuxOpts(args, "agpRt:uw"); ok && !f['u'] && len(pos) > 1 {
				r = st.tmuxString(pos[1].s, srv, cs, show)
			}
		case "new-session", "new-window", "split-window", "respawn-pane", "respawn-window", "display-popup", "pipe-pane":
			if _, pos, ok := guardTmuxOpts(args, guardTmuxSpecs[name]); ok && len(pos) > 0 {
				r = st.script(guardJoin(pos), st.inServer(cs, srv))
			}
		case "send-keys":
			if f, pos, ok := guardTmuxOpts(args, "c:FHKlMN:Rt:X"); ok && !f['X'] && !f['H'] {
				r = st.script(guardKeysText(pos, f['l']), st.inServer(cs, srv))
			}
		}
		if r != "" {
			return r
		}
	}
	return ""
}

var guardTmuxSpecs = map[string]string{
	"new-session":    "Ac:dDe:EF:f:n:Ps:t:x:Xy:",
	"new-window":     "abc:de:F:kn:PSt:",
	"split-window":   "bc:de:fF:hIl:p:Pt:vZ",
	"respawn-pane":   "c:e:kt:",
	"respawn-window": "c:e:kt:",
	"display-popup":  "Bb:Cc:d:e:Eh:kNs:S:t:T:w:x:y:",
	"pipe-pane":      "IOot:",
}

// inServer is the scope of a shell command that runs inside a tmux server
// (a new pane, run-shell, if-shell): its $TMUX names that server.
func (st *guardState) inServer(cs *guardScope, srv guardServer) *guardScope {
	sc := cs.child()
	if srv.known {
		sc.env["TMUX"] = guardVal{known: true, s: srv.path + ",0,0"}
	} else {
		sc.env["TMUX"] = guardVal{s: "${TMUX}", ours: srv.ours}
	}
	return sc
}

// tmuxString checks a tmux command string (if-shell, confirm-before...).
func (st *guardState) tmuxString(text string, srv guardServer, cs *guardScope, show string) string {
	if cs.depth > guardMaxDepth || st.budget <= 0 {
		return guardCrude(text)
	}
	st.budget -= len(text) + 64
	sub := cs.child()
	var list [][]guardArg
	for _, c := range guardLex(text) {
		var argv []guardArg
		for i := range c.words {
			argv = append(argv, st.expandWord(&c.words[i], sub)...)
		}
		list = append(list, guardTmuxSplit(argv)...)
	}
	return st.tmuxCommands(list, srv, sub, show)
}

// guardTmuxOpts parses a tmux command's flags by its getopt spec.
func guardTmuxOpts(args []guardArg, spec string) (map[byte]bool, []guardArg, bool) {
	flags := map[byte]bool{}
	i := 0
	for i < len(args) {
		s := args[i].s
		if s == "--" {
			i++
			break
		}
		if len(s) < 2 || s[0] != '-' {
			break
		}
		next := false
		for j := 1; j < len(s); j++ {
			k := strings.IndexByte(spec, s[j])
			if k < 0 || s[j] == ':' {
				return nil, nil, false
			}
			flags[s[j]] = true
			if k+1 < len(spec) && spec[k+1] == ':' {
				if j+1 == len(s) {
					if i+1 >= len(args) {
						return nil, nil, false
					}
					next = true
				}
				break
			}
		}
		i++
		if next {
			i++
		}
	}
	return flags, args[min(i, len(args)):], true
}

// guardKeysText is what send-keys types, as shell text.
func guardKeysText(keys []guardArg, literal bool) string {
	var b strings.Builder
	for _, k := range keys {
		if !literal {
			switch k.s {
			case "Enter", "C-m", "C-j", "KPEnter", "^M", "^J":
				b.WriteByte('\n')
				continue
			case "Space":
				b.WriteByte(' ')
				continue
			case "Tab", "C-i":
				b.WriteByte('\t')
				continue
			case "C-c", "C-u", "Escape":
				// The line typed so far is dropped.
				s := b.String()
				b.Reset()
				if i := strings.LastIndexByte(s, '\n'); i >= 0 {
					b.WriteString(s[:i+1])
				}
				continue
			}
		}
		b.WriteString(k.s)
	}
	return b.String()
}

// guardTmuxTable lists tmux's commands and their aliases, to resolve unique
// prefixes as tmux does.
var guardTmuxTable = [][2]string{
	{"attach-session", "attach"}, {"bind-key", "bind"}, {"break-pane", "breakp"}, {"capture-pane", "capturep"},
	{"choose-buffer", ""}, {"choose-client", ""}, {"choose-tree", ""}, {"clear-history", "clearhist"},
	{"clear-prompt-history", "clearphist"}, {"clock-mode", ""}, {"command-prompt", ""}, {"confirm-before", "confirm"},
	{"copy-mode", ""}, {"customize-mode", ""}, {"delete-buffer", "deleteb"}, {"detach-client", "detach"},
	{"display-menu", "menu"}, {"display-message", "display"}, {"display-panes", "displayp"}, {"display-popup", "popup"},
	{"find-window", "findw"}, {"has-session", "has"}, {"if-shell", "if"}, {"join-pane", "joinp"},
	{"kill-pane", "killp"}, {"kill-server", ""}, {"kill-session", ""}, {"kill-window", "killw"},
	{"last-pane", "lastp"}, {"last-window", "last"}, {"link-window", "linkw"}, {"list-buffers", "lsb"},
	{"list-clients", "lsc"}, {"list-commands", "lscm"}, {"list-keys", "lsk"}, {"list-panes", "lsp"},
	{"list-sessions", "ls"}, {"list-windows", "lsw"}, {"load-buffer", "loadb"}, {"lock-client", "lockc"},
	{"lock-server", "lock"}, {"lock-session", "locks"}, {"move-pane", "movep"}, {"move-window", "movew"},
	{"new-session", "new"}, {"new-window", "neww"}, {"next-layout", "nextl"}, {"next-window", "next"},
	{"paste-buffer", "pasteb"}, {"pipe-pane", "pipep"}, {"previous-layout", "prevl"}, {"previous-window", "prev"},
	{"refresh-client", "refresh"}, {"rename-session", "rename"}, {"rename-window", "renamew"}, {"resize-pane", "resizep"},
	{"resize-window", "resizew"}, {"respawn-pane", "respawnp"}, {"respawn-window", "respawnw"}, {"rotate-window", "rotatew"},
	{"run-shell", "run"}, {"save-buffer", "saveb"}, {"select-layout", "selectl"}, {"select-pane", "selectp"},
	{"select-window", "selectw"}, {"send-keys", "send"}, {"send-prefix", ""}, {"server-access", ""},
	{"set-buffer", "setb"}, {"set-environment", "setenv"}, {"set-hook", ""}, {"set-option", "set"},
	{"set-window-option", "setw"}, {"show-buffer", "showb"}, {"show-environment", "showenv"}, {"show-hooks", ""},
	{"show-messages", "showmsgs"}, {"show-options", "show"}, {"show-prompt-history", "showphist"}, {"show-window-options", "showw"},
	{"source-file", "source"}, {"split-window", "splitw"}, {"start-server", "start"}, {"suspend-client", "suspendc"},
	{"swap-pane", "swapp"}, {"swap-window", "swapw"}, {"switch-client", "switchc"}, {"unbind-key", "unbind"},
	{"unlink-window", "unlinkw"}, {"wait-for", "wait"},
}

// guardTmuxCommand resolves a tmux command name: an alias, the full name,
// or a unique prefix. It returns "" for unknown or ambiguous names.
func guardTmuxCommand(s string) string {
	if s == "" {
		return ""
	}
	for _, c := range guardTmuxTable {
		if c[1] == s || c[0] == s {
			return c[0]
		}
	}
	found := ""
	for _, c := range guardTmuxTable {
		if strings.HasPrefix(c[0], s) {
			if found != "" {
				return "" // ambiguous: tmux refuses it
			}
			found = c[0]
		}
	}
	return found
}

// ---------------------------------------------------------------------------
// Killing processes.

func (st *guardState) kill(args []guardArg, cs *guardScope, pl *guardPipe, show string) string {
	sig := ""
	i := 0
flags:
	for i < len(args) {
		a := args[i]
		s := a.s
		if !a.known || len(s) < 2 || s[0] != '-' {
			break
		}
		switch {
		case s == "--":
			i++
			break flags
		case s == "-l" || s == "-L" || s == "--list" || s == "--table" || strings.HasPrefix(s, "--list="):
			return ""
		case s == "-s" || s == "-n" || s == "--signal":
			if i+1 < len(args) {
				sig = args[i+1].s
			}
			i += 2
			continue
		case strings.HasPrefix(s, "--signal="):
			sig = s[len("--signal="):]
		case s == "-q" || s == "--queue":
			i += 2
			continue
		case s == "--timeout":
			i += 3
			continue
		case s == "-a" || s == "--all" || s == "-p" || s == "--pid" || s == "--verbose" || s == "-r" || s == "--require-handler":
		case sig == "" && strings.HasPrefix(s, "-s") && guardIsSignal(s[2:]):
			sig = s[2:]
		case sig == "" && guardIsSignal(s[1:]):
			sig = s[1:]
		default:
			break flags // a negative pid: a process group
		}
		i++
	}
	if sig == "0" {
		return "" // signal 0 only checks that the process exists
	}
	for _, p := range args[min(i, len(args)):] {
		if p.known && p.s == "-1" {
			return guardRefuse(show + ": pid -1 signals every process this user may signal, the tmux server too")
		}
		if p.word != nil && st.wordSelects(p.word, cs) {
			return guardRefuse(show + ": its pids come from a command that finds the tmux server")
		}
	}
	if pl.selects {
		return guardRefuse(show + ": it gets its pids from a pipeline that finds the tmux server")
	}
	return ""
}

var guardSignals = map[string]bool{
	"HUP": true, "INT": true, "QUIT": true, "ILL": true, "TRAP": true, "ABRT": true, "IOT": true, "BUS": true,
	"FPE": true, "KILL": true, "USR1": true, "SEGV": true, "USR2": true, "PIPE": true, "ALRM": true, "TERM": true,
	"STKFLT": true, "CHLD": true, "CLD": true, "CONT": true, "STOP": true, "TSTP": true, "TTIN": true, "TTOU": true,
	"URG": true, "XCPU": true, "XFSZ": true, "VTALRM": true, "PROF": true, "WINCH": true, "IO": true, "POLL": true,
	"PWR": true, "SYS": true, "EMT": true, "INFO": true, "LOST": true,
}

func guardIsSignal(s string) bool {
	if s == "" {
		return false
	}
	if guardDigits(s) {
		return true
	}
	u := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	return guardSignals[u] || strings.HasPrefix(u, "RTMIN") || strings.HasPrefix(u, "RTMAX")
}

// procMatch says why pkill, pgrep, killall or skill picks the tmux server,
// or "" when it does not.
func (st *guardState) procMatch(tool string, args []guardArg) string {
	var vals string
	var longVals []string
	full, exact, icase, regex := false, false, false, true
	switch tool {
	case "pkill", "pgrep":
		vals = "dFgGOPqrstuU"
		longVals = []string{"delimiter", "pidfile", "pgroup", "group", "older", "parent", "queue", "runstates",
			"session", "terminal", "euid", "uid", "ns", "nslist", "signal", "env", "cgroup"}
	case "killall":
		vals = "osuynZ"
		longVals = []string{"older-than", "signal", "user", "younger-than", "ns", "context"}
		regex = false
	default: // skill
		regex = false
	}
	selector := false
	var pats []guardArg
	for i := 0; i < len(args); i++ {
		a := args[i]
		s := a.s
		if !a.known || tool == "skill" {
			pats = append(pats, a)
			continue
		}
		if s == "--" {
			pats = append(pats, args[i+1:]...)
			break
		}
		if strings.HasPrefix(s, "--") {
			name, _, hasVal := strings.Cut(s[2:], "=")
			switch name {
			case "full":
				full = true
			case "exact":
				exact = true
			case "ignore-case":
				icase = true
			case "regexp":
				regex = true
			case "list", "version", "help":
				if tool == "killall" {
					return ""
				}
			case "euid", "uid", "user", "group":
				selector = true
			}
			if !hasVal && guardIn(name, longVals) {
				i++
			}
			continue
		}
		if len(s) > 1 && s[0] == '-' {
			if tool != "pgrep" && guardIsSignal(s[1:]) {
				continue
			}
			for j := 1; j < len(s); j++ {
				c := s[j]
				if strings.IndexByte(vals, c) >= 0 {
					if c == 'u' || c == 'U' || (c == 'G' && tool != "killall") {
						selector = true
					}
					if j+1 == len(s) {
						i++
					}
					break
				}
				switch {
				case c == 'f' && tool != "killall":
					full = true
				case c == 'x' && tool != "killall", c == 'e' && tool == "killall":
					exact = true
				case c == 'i' && tool != "killall", c == 'I' && tool == "killall":
					icase = true
				case c == 'r' && tool == "killall":
					regex = true
				case (c == 'l' || c == 'V') && tool == "killall":
					return ""
				}
			}
			continue
		}
		pats = append(pats, a)
	}
	if len(pats) == 0 {
		if selector {
			return "with no pattern it picks every process of that user, the tmux server too"
		}
		return ""
	}
	for _, p := range pats {
		if strings.Contains(strings.ToLower(p.s), "tmux") {
			return fmt.Sprintf("%s matches the tmux server", guardQuote(p.s))
		}
		if p.known && regex {
			if m := guardRegexMatch(p.s, full, exact, icase); m != "" {
				return fmt.Sprintf("the pattern %s also matches %s; match whole names with -x, or kill by pid", guardQuote(p.s), m)
			}
		}
	}
	return ""
}

// guardRegexMatch tests a pgrep-style pattern against the tmux server's
// process name (without -f) or command line (with -f).
func guardRegexMatch(p string, full, exact, icase bool) string {
	expr := p
	if exact {
		expr = "^(?:" + p + ")$"
	}
	if icase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return ""
	}
	cands := []string{"tmux: server", "tmux"}
	what := "the tmux server's process name %q"
	if full {
		cands = []string{"tmux", "/usr/bin/tmux"}
		what = "the tmux server's command line %q"
	}
	for _, c := range cands {
		if re.MatchString(c) {
			return fmt.Sprintf(what, c)
		}
	}
	return ""
}

// selects reports whether a command prints pids of the tmux server, for a
// kill that reads them (pgrep tmux, pidof tmux, ps | grep tmux).
func (st *guardState) selects(name string, args []guardArg, cs *guardScope) bool {
	switch name {
	case "tmux":
		srv, _, rest, ok := st.tmuxGlobals(args, cs)
		if !ok || !srv.ours {
			return false
		}
		for _, a := range rest {
			if strings.Contains(a.s, "#{pid}") {
				return true
			}
		}
		return false
	case "pgrep":
		return st.procMatch(name, args) != ""
	case "grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack":
		pattern := true
		for _, a := range args {
			s := a.s
			if s == "--invert-match" || len(s) > 1 && s[0] == '-' && s[1] != '-' && strings.IndexByte(s, 'v') >= 0 {
				return false
			}
			if pattern && !strings.HasPrefix(s, "-") && a.known {
				pattern = false
				if guardRegexMatch(s, false, false, false) != "" {
					return true
				}
			}
		}
	}
	for _, a := range args {
		if strings.Contains(strings.ToLower(a.s), "tmux") {
			return true
		}
	}
	return false
}

// selectsScript reports whether shell text prints pids of the tmux server.
func (st *guardState) selectsScript(text string, sc *guardScope) bool {
	if sc.depth > guardMaxDepth || st.budget <= 0 {
		return strings.Contains(strings.ToLower(text), "tmux")
	}
	st.budget -= len(text) + 64
	for _, c := range guardLex(text) {
		words := c.words
		for len(words) > 0 {
			if _, _, ok := guardAssignment(&words[0]); !ok {
				break
			}
			words = words[1:]
		}
		var argv []guardArg
		for i := range words {
			argv = append(argv, st.expandWord(&words[i], sc)...)
		}
		name, args := st.unwrap(argv, sc.with(), nil)
		if name != "" && st.selects(name, args, sc) {
			return true
		}
	}
	return false
}

// wordSelects reports whether a word's value holds pids of the tmux server.
func (st *guardState) wordSelects(w *guardWord, sc *guardScope) bool {
	for _, p := range w.parts {
		switch p.kind {
		case guardSubst:
			if st.selectsScript(p.text, sc.child()) {
				return true
			}
		case guardParam:
			n := 0
			for n < len(p.text) && (p.text[n] == '_' || guardAlpha(p.text[n]) || guardDigit(p.text[n])) {
				n++
			}
			if n > 0 && st.lookup(sc, p.text[:n]).tainted {
				return true
			}
		}
	}
	return false
}

// ---------------------------------------------------------------------------
// Small helpers.

func guardAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func guardDigit(c byte) bool { return c >= '0' && c <= '9' }
func guardHex(c byte) bool {
	return guardDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func guardDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !guardDigit(s[i]) {
			return false
		}
	}
	return true
}

func guardLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if !guardAlpha(s[i]) {
			return false
		}
	}
	return s != ""
}

func guardIsName(s string) bool {
	if s == "" || guardDigit(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '_' && !guardAlpha(s[i]) && !guardDigit(s[i]) {
			return false
		}
	}
	return true
}

func guardIn(s string, list []string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func guardJoin(args []guardArg) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.s
	}
	return strings.Join(parts, " ")
}

func guardQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n;&|'\"$`\\<>(){}*?[]#~") {
		return s
	}
	if !strings.ContainsAny(s, "'\n") {
		return "'" + s + "'"
	}
	return strconv.Quote(s)
}

// guardShow quotes a command for a reason, shortened.
func guardShow(name string, args []guardArg) string {
	var b strings.Builder
	b.WriteString(name)
	for _, a := range args {
		if b.Len() > guardShowMax {
			break
		}
		b.WriteByte(' ')
		b.WriteString(guardQuote(a.s))
	}
	s := b.String()
	if len(s) > guardShowMax {
		s = strings.ToValidUTF8(s[:guardShowMax], "") + "…"
	}
	return s
}
