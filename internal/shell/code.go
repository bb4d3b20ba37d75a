package shell

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Interpreters run code of their own, inline (python -c, node -e, awk's
// program) or from standard input. The guard reads that code for
// commands it runs and processes it signals; the scopes read it for the
// files it writes (codeWrites).

// InterpreterNames are the programs Interpreter knows.
var InterpreterNames = []string{"python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "node", "nodejs",
	"bun", "deno", "php", "awk", "gawk", "mawk", "nawk", "lua", "luajit", "Rscript", "osascript", "expect", "tclsh", "wish", "sed",
	"vim", "vi", "nvim", "ex", "view", "vimdiff", "rvim"}

// Interpreter names the language of a program that takes code ("python",
// "perl", "ruby", "js", "php", "awk", "lua", "tcl", "sed", "vim", "e" for
// the rest), or "".
func Interpreter(name string) string {
	switch {
	case strings.HasPrefix(name, "python"), strings.HasPrefix(name, "pypy"):
		return "python"
	case name == "perl" || strings.HasPrefix(name, "perl5"):
		return "perl"
	case name == "ruby" || strings.HasPrefix(name, "ruby3") || strings.HasPrefix(name, "ruby2"):
		return "ruby"
	case name == "node" || name == "nodejs" || name == "bun" || name == "deno":
		return "js"
	case name == "php" || strings.HasPrefix(name, "php8") || strings.HasPrefix(name, "php7"):
		return "php"
	case name == "awk" || name == "gawk" || name == "mawk" || name == "nawk":
		return "awk"
	case strings.HasPrefix(name, "lua"):
		return "lua"
	case name == "Rscript" || name == "osascript" || name == "expect":
		return "e"
	case name == "tclsh" || name == "wish":
		return "tcl"
	case name == "sed":
		return "sed"
	case name == "vim" || name == "vi" || name == "nvim" || name == "ex" || name == "view" || name == "vimdiff" || name == "rvim":
		return "vim"
	}
	return ""
}

// InlineCode is the code an interpreter runs that the command line holds:
// the values of -c, -e and the like, awk's program, and its standard
// input when it reads its code there. sed and vim are read by their own
// rules (the guard's).
func (c *Cmd) InlineCode() []Arg {
	name := c.Name()
	if name == "" && len(c.Args) > 0 {
		name, _ = c.Args[0].Base().Known()
	}
	lang := Interpreter(name)
	var code []Arg
	stdin := false
	args := c.Args[1:]
	switch lang {
	case "python":
		code, stdin = codeFlags(args, "c", "WXm", nil, true)
	case "perl":
		code, stdin = codeFlags(args, "eE", "IMmxl0Fi", nil, true)
	case "ruby":
		code, stdin = codeFlags(args, "e", "rICEx", nil, true)
	case "js":
		code, stdin = codeFlags(args, "ep", "r", []string{"--eval", "--print"}, false)
		if name == "deno" && len(args) > 1 && args[0].String() == "eval" {
			code = args[1:2]
		}
	case "php":
		code, stdin = codeFlags(args, "r", "dcfzBRE", nil, true)
	case "lua", "e":
		code, stdin = codeFlags(args, "ec", "lf", nil, lang == "lua")
	case "tcl":
		stdin = len(args) == 0
	case "awk":
		code = awkProgram(args)
	}
	if stdin || lang == "tcl" || lang == "e" {
		code = append(code, c.Stdin)
	}
	return code
}

// codeFlags finds inline code: the value of one of the flags (-c, -e...),
// or of a long one. rest lists the short flags that take a value of
// their own. stdin reports that, with no code and no script file, the
// program reads its code from standard input.
func codeFlags(args []Arg, flags, vals string, long []string, scriptFile bool) (code []Arg, stdin bool) {
	sawFile := false
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Text()
		if !ok {
			continue
		}
		if s == "-" {
			return code, len(code) == 0
		}
		if s == "--" {
			sawFile = i+1 < len(args)
			break
		}
		if name, val, has := strings.Cut(s, "="); has && strings.HasPrefix(s, "--") {
			for _, l := range long {
				if name == l {
					code = append(code, Lit(val))
				}
			}
			continue
		}
		if slices.Contains(long, s) {
			if i+1 < len(args) {
				code = append(code, args[i+1])
				i++
			}
			continue
		}
		if len(s) > 1 && s[0] == '-' && s[1] != '-' {
			for j := 1; j < len(s); j++ {
				f := s[j]
				if strings.IndexByte(flags, f) >= 0 {
					if j+1 < len(s) {
						code = append(code, Lit(s[j+1:]))
					} else if i+1 < len(args) {
						code = append(code, args[i+1])
						i++
					}
					break
				}
				if strings.IndexByte(vals, f) >= 0 {
					if j+1 == len(s) {
						i++
					}
					break
				}
			}
			continue
		}
		if strings.HasPrefix(s, "-") {
			continue
		}
		// A script file, or (with code) its arguments.
		if len(code) == 0 {
			sawFile = true
		}
		break
	}
	return code, len(code) == 0 && !sawFile && scriptFile
}

// awkProgram is awk's program: -e/--source values, or the first operand
// unless -f gives a file.
func awkProgram(args []Arg) []Arg {
	var code []Arg
	file := false
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Text()
		switch {
		case !ok:
			if !file && len(code) == 0 {
				return []Arg{args[i]}
			}
			return code
		case s == "--":
			if !file && len(code) == 0 && i+1 < len(args) {
				return []Arg{args[i+1]}
			}
			return code
		case s == "-f" || s == "--file" || strings.HasPrefix(s, "-f"):
			file = true
			if s == "-f" || s == "--file" {
				i++
			}
		case s == "-e" || s == "--source":
			if i+1 < len(args) {
				code = append(code, args[i+1])
				i++
			}
		case s == "-v" || s == "-F" || s == "-i" || s == "-l" || s == "--assign" || s == "--field-separator" || s == "--include" || s == "--load":
			i++
		case strings.HasPrefix(s, "-") && len(s) > 1:
		default:
			if !file && len(code) == 0 {
				return []Arg{args[i]}
			}
			return code
		}
	}
	return code
}

// What one-liners write: the calls of each language that create, change
// or remove a file, with the argument that names it. Only a path written
// as a string literal is read; one from a variable or an expression is
// not judged. (Compiled at first use, as every pattern of st's: each st
// process, a hook's too, would pay for them at its start otherwise.)
var codeWriteCalls = sync.OnceValue(func() []writeCall {
	return []writeCall{
		// python: os and shutil, pathlib's methods (on a literal Path).
		{regexp.MustCompile(`\bos\.(?:remove|unlink|rmdir|mkdir|makedirs|truncate|chmod|removedirs)\s*\(`), []int{0}},
		{regexp.MustCompile(`\bos\.(?:rename|replace|renames)\s*\(`), []int{0, 1}},
		{regexp.MustCompile(`\bos\.(?:symlink|link)\s*\(`), []int{1}},
		{regexp.MustCompile(`\bshutil\.(?:rmtree)\s*\(`), []int{0}},
		{regexp.MustCompile(`\bshutil\.(?:copy|copy2|copyfile|copytree|copymode|copystat)\s*\(`), []int{1}},
		{regexp.MustCompile(`\bshutil\.move\s*\(`), []int{0, 1}},
		// node and deno, bun: fs's calls, on any object.
		{regexp.MustCompile(`\.(?:writeFileSync|writeFile|appendFileSync|appendFile|createWriteStream|rmSync|rm|unlinkSync|unlink|rmdirSync|rmdir|mkdirSync|mkdir|truncateSync|truncate|writeTextFile|writeTextFileSync|remove|removeSync)\s*\(`), []int{0}},
		{regexp.MustCompile(`\.(?:renameSync|rename)\s*\(`), []int{0, 1}},
		{regexp.MustCompile(`\.(?:copyFileSync|copyFile|cpSync|cp|symlinkSync|symlink|linkSync|link)\s*\(`), []int{1}},
		{regexp.MustCompile(`\bBun\.write\s*\(`), []int{0}},
		// ruby: File, IO, FileUtils, Dir.
		{regexp.MustCompile(`\b(?:File|IO)\.(?:write|binwrite|delete|unlink|truncate)\s*\(?`), []int{0}},
		{regexp.MustCompile(`\bFile\.rename\s*\(?`), []int{0, 1}},
		{regexp.MustCompile(`\bFile\.symlink\s*\(?`), []int{1}},
		{regexp.MustCompile(`\bFileUtils\.(?:rm|rm_f|rm_r|rm_rf|rmdir|mkdir|mkdir_p|touch|remove)\s*\(?`), []int{0}},
		{regexp.MustCompile(`\bFileUtils\.(?:cp|cp_r|ln|ln_s|install)\s*\(?`), []int{1}},
		{regexp.MustCompile(`\bFileUtils\.mv\s*\(?`), []int{0, 1}},
		{regexp.MustCompile(`\bDir\.(?:mkdir|delete|rmdir|unlink)\s*\(?`), []int{0}},
		// php.
		{regexp.MustCompile(`\b(?:file_put_contents|touch|tempnam)\s*\(`), []int{0}},
		// perl's and php's builtins that take a list of files.
		{regexp.MustCompile(`(?:^|[^.\w$>])(?:unlink|rmdir|mkdir)\b\s*\(?`), []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{regexp.MustCompile(`(?:^|[^.\w$>])rename\b\s*\(?`), []int{0, 1}},
		{regexp.MustCompile(`(?:^|[^.\w$>])(?:symlink|link|copy|move)\b\s*\(?`), []int{1}},
	}
})

// writeCall is a call that writes, and which of its arguments are paths
// written (0-based).
type writeCall struct {
	re   *regexp.Regexp
	args []int
}

// codeOpen finds open calls: python's and php's open(PATH, MODE), node's
// openSync, ruby's File.open, perl's open(FH, MODE, PATH) or open(FH,
// ">PATH").
var codeOpen = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[^.\w$])(?:open|fopen|File\.open|openSync|io\.open|codecs\.open|pathlib\.Path\(.*?\)\.open)\s*\(?`)
})

// pathlibWrite: Path("x").write_text(...) and the like.
var pathlibWrite = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\bPath\s*\(\s*(` + "['\"]" + `[^'"]*['"])\s*\)\s*\.(?:write_text|write_bytes|touch|unlink|mkdir|rmdir|rename|replace|symlink_to|hardlink_to)\b`)
})

// codeWrites lists the files code in lang writes by literal paths.
func codeWrites(lang, code string) []string {
	if lang == "awk" {
		return awkWrites(code)
	}
	var out []string
	for _, call := range codeWriteCalls() {
		for _, m := range call.re.FindAllStringIndex(code, 32) {
			args := CallArgs(code[m[1]:])
			for _, i := range call.args {
				if i < len(args) {
					if p, ok := strLit(args[i]); ok {
						out = append(out, p)
					}
				}
			}
		}
	}
	for _, m := range pathlibWrite().FindAllStringSubmatch(code, 32) {
		if p, ok := strLit(m[1]); ok {
			out = append(out, p)
		}
	}
	for _, m := range codeOpen().FindAllStringIndex(code, 32) {
		if p, ok := openedForWrite(lang, CallArgs(code[m[1]:])); ok {
			out = append(out, p)
		}
	}
	return out
}

// openedForWrite is the path an open call writes, when its mode writes.
func openedForWrite(lang string, args []string) (string, bool) {
	if lang == "perl" {
		// open(FH, MODE, PATH) or open(FH, MODEPATH).
		switch {
		case len(args) >= 3:
			mode, _ := strLit(args[1])
			if p, ok := strLit(args[2]); ok && strings.ContainsAny(mode, ">+") {
				return p, true
			}
		case len(args) == 2:
			s, ok := strLit(args[1])
			s = strings.TrimSpace(s)
			if ok && (strings.HasPrefix(s, ">") || strings.HasPrefix(s, "+")) {
				return strings.TrimSpace(strings.TrimLeft(s, "+<>")), true
			}
		}
		return "", false
	}
	if len(args) < 2 {
		return "", false
	}
	mode := ""
	for _, a := range args[1:] {
		a = strings.TrimSpace(a)
		if k, v, ok := strings.Cut(a, "="); ok && strings.TrimSpace(k) == "mode" {
			a = strings.TrimSpace(v)
		}
		if m, ok := strLit(a); ok {
			mode = m
			break
		}
		if strings.Contains(a, "WRONLY") || strings.Contains(a, "RDWR") || strings.Contains(a, "CREAT") {
			mode = "w"
			break
		}
	}
	if !strings.ContainsAny(mode, "wax+") {
		return "", false
	}
	return strLit(args[0])
}

// strLit is the text of a string literal ('x', "x", `x`) with nothing
// else in it.
func strLit(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) < 2 || !strings.ContainsRune(`'"`+"`", rune(s[0])) || s[len(s)-1] != s[0] {
		return "", false
	}
	inner := s[1 : len(s)-1]
	if strings.ContainsAny(inner, `\$`+"`"+string(s[0])) || s[0] == '"' && strings.Contains(inner, "#{") {
		return "", false // escapes, interpolation
	}
	return inner, true
}

// CallArgs splits the arguments of a call in code, s being the text after
// its name: at the commas (and perl's =>) of its top level, up to its
// closing parenthesis, or without one to the end of the statement.
func CallArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			if depth == 0 {
				return append(out, s[start:i])
			}
			depth--
		case (c == ';' || c == '\n') && depth == 0:
			return append(out, s[start:i])
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		case c == '=' && depth == 0 && i+1 < len(s) && s[i+1] == '>':
			out = append(out, s[start:i])
			start = i + 2
			i++
		case c == ' ' && depth == 0 && strings.HasPrefix(strings.TrimLeft(s[i:], " "), "or "):
			return append(out, s[start:i]) // perl's "open(...) or die" without parentheses
		}
	}
	return append(out, s[start:])
}

// awkRedirect: print or printf ... > "file" (or >>).
var awkRedirect = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bprintf?\b[^;{}\n]*?>>?\s*("[^"]*")`) })

// awkWrites lists the files an awk program's print statements write.
func awkWrites(code string) []string {
	var out []string
	for _, m := range awkRedirect().FindAllStringSubmatch(code, 32) {
		if p, ok := strLit(m[1]); ok {
			out = append(out, p)
		}
	}
	return out
}

// codeWrites are the files an interpreter's inline code writes by
// literal paths, and the files gawk -i inplace edits.
func (c *Cmd) codeWrites() []Write {
	lang := Interpreter(c.Name())
	switch lang {
	case "", "sed", "vim", "tcl", "e":
		return nil
	}
	var out []Write
	for _, k := range c.InlineCode() {
		text, ok := k.Text()
		if !ok {
			continue
		}
		for _, p := range codeWrites(lang, text) {
			out = append(out, c.write(Lit(p), c.Name()+" code"))
		}
	}
	if lang == "awk" {
		for _, f := range awkInPlace(c.Args[1:]) {
			out = append(out, c.write(f, c.Name()+" -i inplace"))
		}
	}
	return out
}

// awkInPlace: gawk -i inplace edits the files it reads.
func awkInPlace(args []Arg) []Arg {
	inplace, program := false, false
	var files []Arg
	for i := 0; i < len(args); i++ {
		s, ok := args[i].Text()
		switch {
		case !ok || program:
			if program {
				files = append(files, args[i])
			}
			program = true
		case s == "-i" || s == "--include":
			if i+1 < len(args) {
				inplace = inplace || args[i+1].String() == "inplace"
				i++
			}
		case s == "-iinplace" || s == "--include=inplace":
			inplace = true
		case s == "-f" || s == "--file" || s == "-e" || s == "--source":
			program = true
			i++
		case s == "-v" || s == "-F" || s == "-l" || s == "--assign" || s == "--field-separator" || s == "--load":
			i++
		case strings.HasPrefix(s, "-") && len(s) > 1:
		default:
			program = true
		}
	}
	if !inplace {
		return nil
	}
	return files
}
