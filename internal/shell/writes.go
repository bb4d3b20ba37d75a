package shell

import (
	"slices"
	"strings"
)

// Write is a file or folder a command may create, change or remove.
type Write struct {
	Cmd *Cmd
	// Path is where, as the command names it: relative paths are
	// relative to Dir.
	Path Arg
	// Dir is the folder the command runs in (git -C's folder for git).
	Dir Arg
	// Tree: the command changes files across the whole work tree of the
	// repository at Dir, whatever Path says (git reset --hard, stash,
	// checkout BRANCH, clean, merge...).
	Tree bool
	// Link is what a link made at Path points to: for a symbolic link as
	// written (relative to Path's folder), for a hard link a path like
	// Path (relative to Dir).
	Link     *Arg
	Symbolic bool
	// Root: Path is relative to the repository's root, not to Dir (git's
	// ":/x" pathspecs, the paths of a patch git applies).
	Root bool
	// What names the command for messages ("rm", "git reset --hard").
	What string
}

// Writes lists what the commands may write, in order.
func Writes(cmds []*Cmd) []Write {
	var out []Write
	for _, c := range cmds {
		out = append(out, c.Writes()...)
	}
	return out
}

// devices are written without changing any file.
func device(p Arg) bool {
	s, ok := p.Text()
	if !ok {
		return false
	}
	switch s {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero":
		return true
	}
	return strings.HasPrefix(s, "/dev/fd/") || strings.HasPrefix(s, "/proc/self/fd/")
}

// Writes lists what one command may write: its redirections, and the
// files its program writes by its arguments (or its inline code).
func (c *Cmd) Writes() []Write {
	var out []Write
	for _, rd := range c.Redirs {
		switch rd.Op {
		case ">", ">>", ">|", "&>", "&>>", "<>", "&>|", ">>|":
			out = append(out, c.write(rd.Target, rd.Op+" (redirection)"))
		case ">&":
			if s, ok := rd.Target.Text(); !ok || !(isDigits(s) || s == "-") {
				out = append(out, c.write(rd.Target, ">& (redirection)"))
			}
		}
	}
	if len(c.Args) > 0 {
		out = append(out, c.programWrites(c.Name(), c.Args[1:])...)
		out = append(out, c.codeWrites()...)
	}
	// Devices are written without changing any file.
	return slices.DeleteFunc(out, func(w Write) bool { return !w.Tree && (len(w.Path.pieces) == 0 || device(w.Path)) })
}

// operandWriters write their operands; the letters are their short
// options that take a value.
var operandWriters = map[string]string{"tee": "", "rm": "", "rmdir": "", "unlink": "", "shred": "ns", "touch": "dtr",
	"mkdir": "m", "truncate": "sr", "mkfifo": "mZ", "mknod": "mZ"}

// outputOptions are the options that name the file a program writes,
// after its short options that take a value.
var outputOptions = map[string][]string{"curl": {"oAHXdeFmruxwbcEKT", "-o", "--output"},
	"wget": {"OAHXdeFmruxwbcEKT", "-O", "--output-document"}, "sort": {"okSTt", "-o", "--output"}, "time": {"fo", "-o", "--output"}}

// programWrites: the files a program writes by its arguments.
func (c *Cmd) programWrites(name string, args []Arg) []Write {
	var out []Write
	add := func(ps []Arg, what string) {
		for _, p := range ps {
			out = append(out, c.write(p, what))
		}
	}
	if vals, ok := operandWriters[name]; ok {
		ops, _ := parseArgs(args, vals, nil)
		if name == "mknod" && len(ops) > 1 {
			ops = ops[:1]
		}
		add(ops, name)
		return out
	}
	if spec, ok := outputOptions[name]; ok {
		_, opts := parseArgs(args, spec[0], []string{"--output", "--output-document", "--format"})
		for _, o := range opts {
			if slices.Contains(spec[1:], o.name) {
				add([]Arg{o.val}, name+" "+spec[1])
			}
		}
		return out
	}
	switch name {
	case "cp", "mv", "install", "ln":
		return c.copyLike(name, args)
	case "chmod", "chown", "chgrp":
		add(chmodOperands(args), name)
	case "sed", "perl":
		add(inPlace(name, args), name+" -i")
	case "dd":
		for _, a := range args {
			if v, ok := a.CutPrefix("of="); ok {
				add([]Arg{v}, "dd")
			}
		}
	case "find":
		if slices.ContainsFunc(args, func(a Arg) bool { return a.String() == "-delete" }) {
			add(findRoots(args), "find -delete")
		}
	case "git":
		return c.gitWrites(args)
	case "rsync":
		return c.rsyncWrites(args)
	case "tar", "gtar", "bsdtar":
		return c.tarWrites(args)
	case "unzip":
		return c.unzipWrites(args)
	case "patch":
		return c.patchWrites(args)
	case "apply_patch", "applypatch":
		texts := []Arg{c.Stdin}
		for _, t := range append(texts, args...) {
			if s, ok := t.Text(); ok {
				for _, p := range PatchPaths(s) {
					add([]Arg{Lit(p)}, name)
				}
			}
		}
	}
	return out
}

func findRoots(args []Arg) []Arg {
	var roots []Arg
	for _, a := range args {
		s, ok := a.Text()
		if ok && (s == "-H" || s == "-L" || s == "-P") && len(roots) == 0 {
			continue
		}
		if ok && (strings.HasPrefix(s, "-") || s == "(" || s == "!") {
			break
		}
		roots = append(roots, a)
	}
	if len(roots) == 0 {
		roots = []Arg{Lit(".")}
	}
	return roots
}

type option struct {
	name string // "-t" or "--target-directory"
	val  Arg
}

// parseArgs splits arguments into operands and options the getopt way:
// short options cluster ("-rf"); the letters in withValue take a value
// (the rest of the cluster, or the next word); long options take one as
// --name=value, or as the next word when listed in longWithValue; "--"
// ends the options. A word st cannot read is an operand.
func parseArgs(args []Arg, withValue string, longWithValue []string) (ops []Arg, opts []option) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		s, ok := a.Text()
		switch {
		case !ok:
			ops = append(ops, a)
		case s == "--":
			return append(ops, args[i+1:]...), opts
		case strings.HasPrefix(s, "--"):
			name, val, hasVal := strings.Cut(s, "=")
			o := option{name: name}
			if hasVal {
				o.val = Lit(val)
			} else if slices.Contains(longWithValue, name) && i+1 < len(args) {
				i++
				o.val = args[i]
			}
			opts = append(opts, o)
		case strings.HasPrefix(s, "-") && len(s) > 1:
			for j := 1; j < len(s); j++ {
				o := option{name: "-" + s[j:j+1]}
				if strings.IndexByte(withValue, s[j]) >= 0 {
					if j+1 < len(s) {
						o.val = Lit(s[j+1:])
					} else if i+1 < len(args) {
						i++
						o.val = args[i]
					}
					opts = append(opts, o)
					break
				}
				opts = append(opts, o)
			}
		default:
			ops = append(ops, a)
		}
	}
	return ops, opts
}

func hasOpt(opts []option, names ...string) (option, bool) {
	for _, o := range opts {
		if slices.Contains(names, o.name) {
			return o, true
		}
	}
	return option{}, false
}

// copyLike: cp, mv, install and ln write their target (a file, or a folder
// that receives the sources); mv also removes its sources; ln makes links.
func (c *Cmd) copyLike(name string, args []Arg) []Write {
	var out []Write
	add := func(p Arg, link *Arg, sym bool) {
		if len(p.pieces) == 0 || device(p) {
			return
		}
		out = append(out, Write{Cmd: c, Path: p, Dir: c.Dir, What: name, Link: link, Symbolic: sym})
	}
	withValue := map[string]string{"cp": "tS", "mv": "tS", "install": "tmogS", "ln": "tS"}[name]
	ops, opts := parseArgs(args, withValue, []string{"--target-directory", "--suffix", "--mode", "--owner", "--group"})
	_, sym := hasOpt(opts, "-s", "--symbolic")
	if name == "install" {
		if _, ok := hasOpt(opts, "-d", "--directory"); ok {
			for _, o := range ops {
				add(o, nil, false)
			}
			return out
		}
	}
	var dest Arg
	var srcs []Arg
	toDir := false
	if t, ok := hasOpt(opts, "-t", "--target-directory"); ok {
		dest, srcs, toDir = t.val, ops, true
	} else if len(ops) >= 2 {
		dest, srcs = ops[len(ops)-1], ops[:len(ops)-1]
	} else if len(ops) == 1 && name == "ln" {
		// "ln -s /x/y" makes the link y here.
		dest, srcs = ops[0].Base(), ops
	} else {
		return out
	}
	if name == "mv" {
		for _, s := range srcs {
			add(s, nil, false)
		}
	}
	if name != "ln" {
		add(dest, nil, false)
		return out
	}
	for _, s := range srcs {
		s := s
		at := dest
		if toDir || len(srcs) > 1 || strings.HasSuffix(dest.String(), "/") {
			at = Concat(dest, Lit("/"), s.Base())
		}
		add(at, &s, sym)
	}
	return out
}

// chmodOperands: the first operand is the mode or owner, unless
// --reference gives it; a mode may look like an option ("chmod -x f").
func chmodOperands(args []Arg) []Arg {
	var ops []Arg
	ref, endOpts := false, false
	for _, a := range args {
		s, ok := a.Text()
		switch {
		case ok && !endOpts && s == "--":
			endOpts = true
		case ok && !endOpts && strings.HasPrefix(s, "--"):
			if strings.HasPrefix(s, "--reference") {
				ref = true
			}
		case ok && !endOpts && len(s) > 1 && s[0] == '-' && strings.Trim(s[1:], "RfvcHLPh") == "":
		default:
			ops = append(ops, a)
		}
	}
	if !ref && len(ops) > 0 {
		ops = ops[1:]
	}
	return ops
}

// inPlace: sed -i and perl -i write the files they are given. Options are
// read as those programs do, so that "-i.bak", "-ni" and perl's "-pi -e"
// work, and "-ie" means "-i" with the suffix "e".
func inPlace(name string, args []Arg) []Arg {
	inplace, script := false, false
	var ops []Arg
	afterI := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		t, ok := a.Text()
		switch {
		case !ok:
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
		return nil
	}
	if !script && len(ops) > 0 {
		ops = ops[1:]
	}
	return ops
}

// DiffPaths lists the files a unified diff (git's) changes, as the
// diff names them from the repository's root.
func DiffPaths(patch string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		p = strings.TrimSpace(p)
		if i := strings.IndexByte(p, '\t'); i >= 0 {
			p = p[:i]
		}
		for _, pre := range []string{"a/", "b/"} {
			p = strings.TrimPrefix(p, pre)
		}
		if p == "" || p == "/dev/null" || seen[p] {
			return
		}
		seen[p] = true
		out = append(out, p)
	}
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		switch {
		case strings.HasPrefix(line, "+++ "):
			add(line[4:])
		case strings.HasPrefix(line, "--- "):
			add(line[4:])
		case strings.HasPrefix(line, "rename to "), strings.HasPrefix(line, "rename from "):
			_, p, _ := strings.Cut(line, " ")
			_, p, _ = strings.Cut(p, " ")
			add(p)
		}
	}
	return out
}

// PatchPaths lists the files a Codex apply_patch input changes: the paths
// of its "*** Add File:", "*** Update File:", "*** Delete File:" and
// "*** Move to:" lines, in order, each once. It reads the lines wherever
// they are, so the patch may come bare (the edit tool's input) or inside a
// shell command (apply_patch <<'EOF' ... EOF). Paths are as written:
// relative to the agent's folder, or absolute.
func PatchPaths(patch string) []string {
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		// Codex trims the marker lines it reads, so indented markers
		// count. A context line that happens to read like a marker would
		// add a path that is not changed: the scope then refuses more,
		// never less.
		t := strings.TrimLeft(line, " \t")
		for _, m := range []string{"*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:"} {
			if rest, ok := strings.CutPrefix(t, m); ok {
				p := strings.TrimSpace(rest)
				if p != "" && !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
				break
			}
		}
	}
	return out
}
