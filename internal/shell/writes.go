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
// files its program writes by its arguments.
func (c *Cmd) Writes() []Write {
	var out []Write
	add := func(p Arg, what string) {
		if len(p.pieces) == 0 || device(p) {
			return
		}
		out = append(out, Write{Cmd: c, Path: p, Dir: c.Dir, What: what})
	}
	for _, rd := range c.Redirs {
		switch rd.Op {
		case ">", ">>", ">|", "&>", "&>>", "<>", "&>|", ">>|":
			add(rd.Target, rd.Op+" (redirection)")
		case ">&":
			if s, ok := rd.Target.Text(); !ok || !(isDigits(s) || s == "-") {
				add(rd.Target, ">& (redirection)")
			}
		}
	}
	if len(c.Args) == 0 {
		return out
	}
	name := c.Name()
	args := c.Args[1:]
	switch name {
	case "tee":
		ops, _ := parseArgs(args, "", nil)
		for _, o := range ops {
			add(o, "tee")
		}
	case "cp", "mv", "install", "ln":
		out = append(out, c.copyLike(name, args)...)
	case "rm", "rmdir", "unlink", "shred", "touch", "mkdir", "truncate", "mkfifo", "mknod":
		vals := map[string]string{"touch": "dtr", "mkdir": "m", "truncate": "sr", "shred": "ns", "mkfifo": "mZ", "mknod": "mZ"}[name]
		ops, _ := parseArgs(args, vals, nil)
		if name == "mknod" && len(ops) > 1 {
			ops = ops[:1]
		}
		for _, o := range ops {
			add(o, name)
		}
	case "chmod", "chown", "chgrp":
		for _, o := range chmodOperands(args) {
			add(o, name)
		}
	case "sed", "perl":
		for _, o := range inPlace(name, args) {
			add(o, name+" -i")
		}
	case "dd":
		for _, a := range args {
			if v, ok := a.CutPrefix("of="); ok {
				add(v, "dd")
			}
		}
	case "curl", "wget":
		short := map[string]string{"curl": "o", "wget": "O"}[name]
		long := map[string]string{"curl": "--output", "wget": "--output-document"}[name]
		_, opts := parseArgs(args, short+"AHXdeFmruxwbcEKT", []string{"--output", "--output-document"})
		for _, o := range opts {
			if o.name == "-"+short || o.name == long {
				add(o.val, name)
			}
		}
	case "sort":
		_, opts := parseArgs(args, "okSTt", []string{"--output"})
		for _, o := range opts {
			if o.name == "-o" || o.name == "--output" {
				add(o.val, "sort -o")
			}
		}
	case "time":
		_, opts := parseArgs(args, "fo", []string{"--output", "--format"})
		for _, o := range opts {
			if o.name == "-o" || o.name == "--output" {
				add(o.val, "time -o")
			}
		}
	case "find":
		if slices.ContainsFunc(args, func(a Arg) bool { return a.String() == "-delete" }) {
			for _, root := range findRoots(args) {
				add(root, "find -delete")
			}
		}
	case "git":
		out = append(out, c.gitWrites(args)...)
	case "apply_patch", "applypatch":
		var texts []string
		if s, ok := c.Stdin.Text(); ok {
			texts = append(texts, s)
		}
		for _, a := range args {
			if s, ok := a.Text(); ok {
				texts = append(texts, s)
			}
		}
		for _, t := range texts {
			for _, p := range PatchPaths(t) {
				add(Lit(p), name)
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

// gitWrites: the git commands that write work-tree files. Those that
// change files beyond the paths they name are Tree writes, judged
// against the whole repository whatever the folder they run in.
func (c *Cmd) gitWrites(args []Arg) []Write {
	dir := c.Dir
	var out []Write
	tree := func(what string) {
		out = append(out, Write{Cmd: c, Path: Lit("."), Dir: dir, Tree: true, What: "git " + what})
	}
	paths := func(what string, ps []Arg) {
		for _, p := range ps {
			if s, ok := p.Text(); ok && strings.HasPrefix(s, ":") {
				// A pathspec with magic (":/", ":(top)x", ":!x"): it may
				// reach the whole tree.
				if rest, ok := strings.CutPrefix(s, ":/"); ok && rest != "" && !strings.ContainsAny(rest[:1], "(!^") {
					out = append(out, Write{Cmd: c, Path: Lit(rest), Dir: dir, Root: true, What: "git " + what})
					continue
				}
				tree(what + " " + s)
				continue
			}
			if len(p.pieces) == 0 {
				continue
			}
			out = append(out, Write{Cmd: c, Path: p, Dir: dir, What: "git " + what})
		}
	}
	// Global options before the subcommand; -C moves the folder.
	for len(args) > 0 {
		s, ok := args[0].Text()
		if !ok {
			tree("(options st cannot read)")
			return out
		}
		if !strings.HasPrefix(s, "-") {
			break
		}
		args = args[1:]
		switch {
		case s == "-C" && len(args) > 0:
			dir = JoinDir(dir, args[0])
			args = args[1:]
		case s == "--work-tree" || s == "--git-dir" || strings.HasPrefix(s, "--work-tree=") || strings.HasPrefix(s, "--git-dir="):
			// Another work tree: where it writes is its own matter.
			tree("--work-tree")
			return out
		case s == "-c" || s == "--namespace" || s == "--config-env" || s == "--super-prefix":
			if len(args) > 0 {
				args = args[1:]
			}
		}
	}
	if len(args) == 0 {
		return out
	}
	sub, ok := args[0].Text()
	if !ok {
		tree("(a subcommand st cannot read)")
		return out
	}
	args = args[1:]
	sep := slices.IndexFunc(args, func(a Arg) bool { return a.String() == "--" })
	switch sub {
	case "checkout":
		ops, opts := parseArgs(args, "bBU", []string{"--orphan", "--conflict", "--pathspec-from-file"})
		if _, ok := hasOpt(opts, "-b", "-B", "--orphan"); ok && sep < 0 {
			if len(ops) <= 1 {
				return out // a new branch from HEAD: no file changes
			}
			tree("checkout -b")
			return out
		}
		if sep >= 0 {
			ps := args[sep+1:]
			if len(ps) == 0 {
				tree("checkout --")
			}
			paths("checkout", ps)
			return out
		}
		// Without "--" a word may be a branch: switching branches
		// rewrites files across the tree.
		if len(ops) == 0 {
			return out
		}
		tree("checkout " + ops[0].String())
		paths("checkout", ops)
	case "restore":
		ops, _ := parseArgs(args, "s", []string{"--source", "--pathspec-from-file"})
		if len(ops) == 0 {
			tree("restore")
		}
		paths("restore", ops)
	case "rm", "mv":
		ops, _ := parseArgs(args, "", nil)
		paths(sub, ops)
	case "reset":
		ops, opts := parseArgs(args, "", []string{"--pathspec-from-file"})
		if sep >= 0 {
			paths("reset", args[sep+1:])
			return out
		}
		if _, ok := hasOpt(opts, "--hard", "--merge", "--keep"); ok || len(ops) <= 1 {
			tree("reset")
			return out
		}
		paths("reset", ops[1:])
	case "clean":
		ops, opts := parseArgs(args, "e", []string{"--exclude"})
		if _, dry := hasOpt(opts, "-n", "--dry-run"); dry {
			return out
		}
		if len(ops) == 0 {
			tree("clean")
		}
		paths("clean", ops)
	case "stash":
		if len(args) == 0 {
			tree("stash")
			return out
		}
		verb, _ := args[0].Text()
		switch verb {
		case "list", "show", "drop", "clear", "create", "store":
			return out
		case "push", "save", "-u", "-a", "-k", "-p", "--include-untracked", "--keep-index", "-m", "--message":
			if sep >= 0 {
				paths("stash", args[sep+1:])
				return out
			}
			if verb == "push" {
				ops, _ := parseArgs(args[1:], "m", []string{"--message", "--pathspec-from-file"})
				if len(ops) > 0 {
					paths("stash", ops)
					return out
				}
			}
			tree("stash " + verb)
		default:
			tree("stash " + verb)
		}
	case "switch":
		ops, opts := parseArgs(args, "cC", []string{"--create", "--force-create", "--orphan"})
		if _, ok := hasOpt(opts, "-c", "-C", "--create", "--force-create", "--orphan"); ok && len(ops) <= 1 {
			return out
		}
		tree("switch")
	case "rebase", "merge", "am", "pull", "cherry-pick", "revert", "bisect", "sparse-checkout", "read-tree",
		"checkout-index", "filter-branch", "worktree", "submodule", "stage", "update-index":
		switch sub {
		case "bisect":
			if len(args) > 0 {
				if v, _ := args[0].Text(); v == "log" || v == "visualize" || v == "view" || v == "terms" {
					return out
				}
			}
		case "merge", "rebase", "cherry-pick", "revert", "am":
			for _, a := range args {
				if s, _ := a.Text(); s == "--abort" || s == "--quit" || s == "--show-current-patch" {
					if s == "--quit" || s == "--show-current-patch" {
						return out
					}
				}
			}
		case "worktree", "submodule", "stage", "update-index", "read-tree":
			if sub == "read-tree" && !slices.ContainsFunc(args, func(a Arg) bool { return a.String() == "-u" }) {
				return out
			}
			if sub == "worktree" || sub == "submodule" || sub == "stage" || sub == "update-index" {
				return out
			}
		}
		tree(sub)
	case "apply":
		ops, opts := parseArgs(args, "pC", []string{"--directory", "--include", "--exclude"})
		if _, ok := hasOpt(opts, "--check", "--stat", "--numstat", "--summary"); ok {
			if _, apply := hasOpt(opts, "--apply"); !apply {
				return out
			}
		}
		var texts []string
		if len(ops) == 0 {
			if s, ok := c.Stdin.Text(); ok {
				texts = append(texts, s)
			}
		}
		if len(texts) == 0 {
			// The patch is a file st does not read: any path.
			tree("apply")
			return out
		}
		for _, t := range texts {
			for _, p := range DiffPaths(t) {
				out = append(out, Write{Cmd: c, Path: Lit(p), Dir: dir, Root: true, What: "git apply"})
			}
		}
	}
	return out
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
