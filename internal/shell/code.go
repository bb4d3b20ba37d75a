package shell

import (
	"slices"
	"strings"
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
