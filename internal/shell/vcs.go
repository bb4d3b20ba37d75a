package shell

import (
	"slices"
	"strings"
)

// Version control: git's options, keys and subcommands that run shell
// text.
var vcsRunners = map[string]runner{
	"git": runGit,
}

// runGit: git's options and subcommands that run shell text: -c with a
// command-valued key, config of such a key, rebase --exec, bisect run,
// submodule foreach, filter-branch's filters, difftool --extcmd.
func runGit(w *wrapCall) wrapped {
	out := wrapped{}
	args := w.args
	i := 0
	for i < len(args) {
		s, ok := args[i].Text()
		if !ok {
			return out
		}
		if !strings.HasPrefix(s, "-") {
			break
		}
		switch s {
		case "-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env":
			i++
		case "-c":
			if i+1 < len(args) {
				i++
				out.texts = append(out.texts, gitConfigText(args[i])...)
			}
		}
		i++
	}
	if i >= len(args) {
		return out
	}
	sub, _ := args[i].Text()
	out.texts = append(out.texts, gitSubTexts(sub, args[i+1:], &out)...)
	return out
}

// gitSubTexts is the shell text a git subcommand runs (bisect run's
// command goes to out.argv).
func gitSubTexts(sub string, rest []Arg, out *wrapped) []runText {
	var texts []runText
	switch sub {
	case "config":
		var kv []Arg
		for _, a := range rest {
			if s, ok := a.Text(); ok && strings.HasPrefix(s, "-") {
				continue
			}
			kv = append(kv, a)
		}
		if len(kv) >= 2 {
			texts = append(texts, gitConfigText(Concat(kv[0], Lit("="), kv[1]))...)
		}
	case "rebase":
		for j := 0; j < len(rest); j++ {
			s, _ := rest[j].Text()
			switch {
			case (s == "-x" || s == "--exec") && j+1 < len(rest):
				texts = append(texts, runText{text: rest[j+1]})
				j++
			case strings.HasPrefix(s, "--exec="):
				texts = append(texts, runText{text: Lit(s[len("--exec="):])})
			}
		}
	case "bisect":
		if len(rest) > 1 {
			if s, _ := rest[0].Text(); s == "run" {
				out.argv = rest[1:]
			}
		}
	case "submodule":
		for j := 0; j < len(rest); j++ {
			if s, _ := rest[j].Text(); s == "foreach" {
				if tail := getopt(rest[j+1:], "", nil, nil); len(tail) > 0 {
					texts = append(texts, runText{text: Join(tail, " ")})
				}
				break
			}
		}
	case "filter-branch", "difftool", "mergetool":
		for j := 0; j < len(rest); j++ {
			s, _ := rest[j].Text()
			if sub != "filter-branch" {
				// difftool's command attached: --extcmd=CMD, -xCMD.
				if v, ok := rest[j].CutPrefix("--extcmd="); ok {
					texts = append(texts, runText{text: v})
					continue
				}
				if v, ok := rest[j].CutPrefix("-x"); ok && s != "-x" {
					texts = append(texts, runText{text: v})
					continue
				}
			}
			if j+1 < len(rest) && (sub == "filter-branch" && strings.HasSuffix(s, "-filter") || sub != "filter-branch" && (s == "-x" || s == "--extcmd")) {
				texts = append(texts, runText{text: rest[j+1]})
				j++
			}
		}
	}
	return texts
}

// gitConfigText is the shell text a git configuration key=value runs.
func gitConfigText(kv Arg) []runText {
	if len(kv.pieces) == 0 || kv.pieces[0].hole != nil {
		// A key st cannot read: it may be any command-valued key.
		return []runText{{text: kv}}
	}
	key, _, ok := strings.Cut(kv.pieces[0].lit, "=")
	if !ok {
		return nil
	}
	val, _ := kv.CutPrefix(key + "=")
	key = strings.ToLower(key)
	bang := func() []runText {
		if t, ok := val.CutPrefix("!"); ok {
			return []runText{{text: t}}
		}
		if !val.IsKnown() {
			return []runText{{text: val}}
		}
		return nil
	}
	switch {
	case strings.HasPrefix(key, "alias."), key == "credential.helper", strings.HasPrefix(key, "credential.") && strings.HasSuffix(key, ".helper"):
		return bang()
	case slices.Contains([]string{"core.pager", "core.editor", "core.sshcommand", "core.askpass", "core.fsmonitor",
		"core.gitproxy", "sequence.editor", "diff.external", "gpg.program", "interactive.difffilter",
		"uploadpack.packobjectshook", "web.browser", "core.hookspath"}, key),
		strings.HasPrefix(key, "pager."),
		strings.HasSuffix(key, ".cmd"), strings.HasSuffix(key, ".command"), strings.HasSuffix(key, ".textconv"),
		strings.HasSuffix(key, ".driver"), strings.HasSuffix(key, ".clean"), strings.HasSuffix(key, ".smudge"),
		strings.HasSuffix(key, ".process"), strings.HasSuffix(key, ".program"):
		return []runText{{text: val}}
	}
	return nil
}

// What git writes: the work-tree files its commands change (the ownership
// scopes judge them; writes.go asks gitWrites for a git command).

// gitWrites: the git commands that write work-tree files. Those that
// change files beyond the paths they name are Tree writes, judged
// against the whole repository whatever the folder they run in.
func (c *Cmd) gitWrites(args []Arg) []Write {
	g := &gitWriter{c: c, dir: c.Dir}
	args, ok := g.globals(args)
	if !ok || len(args) == 0 {
		return g.out
	}
	sub, ok := args[0].Text()
	if !ok {
		g.tree("(a subcommand st cannot read)")
		return g.out
	}
	args = args[1:]
	sep := slices.IndexFunc(args, func(a Arg) bool { return a.String() == "--" })
	switch sub {
	case "checkout":
		g.checkout(args, sep)
	case "restore":
		ops, _ := parseArgs(args, "s", []string{"--source", "--pathspec-from-file"})
		if len(ops) == 0 {
			g.tree("restore")
		}
		g.paths("restore", ops)
	case "rm", "mv":
		ops, _ := parseArgs(args, "", nil)
		g.paths(sub, ops)
	case "reset":
		g.reset(args, sep)
	case "clean":
		ops, opts := parseArgs(args, "e", []string{"--exclude"})
		if _, dry := hasOpt(opts, "-n", "--dry-run"); !dry {
			if len(ops) == 0 {
				g.tree("clean")
			}
			g.paths("clean", ops)
		}
	case "stash":
		g.stash(args, sep)
	case "switch":
		ops, opts := parseArgs(args, "cC", []string{"--create", "--force-create", "--orphan"})
		if _, ok := hasOpt(opts, "-c", "-C", "--create", "--force-create", "--orphan"); !ok || len(ops) > 1 {
			g.tree("switch")
		}
	case "apply":
		g.apply(args)
	default:
		if gitChangesTree(sub, args) {
			g.tree(sub)
		}
	}
	return g.out
}

// gitWriter gathers the writes of one git command.
type gitWriter struct {
	c   *Cmd
	dir Arg
	out []Write
}

func (g *gitWriter) tree(what string) {
	g.out = append(g.out, Write{Cmd: g.c, Path: Lit("."), Dir: g.dir, Tree: true, What: "git " + what})
}

// paths adds the pathspecs a git command writes.
func (g *gitWriter) paths(what string, ps []Arg) {
	for _, p := range ps {
		if s, ok := p.Text(); ok && strings.HasPrefix(s, ":") {
			// A pathspec with magic (":/", ":(top)x", ":!x"): it may
			// reach the whole tree.
			if rest, ok := strings.CutPrefix(s, ":/"); ok && rest != "" && !strings.ContainsAny(rest[:1], "(!^") {
				g.out = append(g.out, Write{Cmd: g.c, Path: Lit(rest), Dir: g.dir, Root: true, What: "git " + what})
				continue
			}
			g.tree(what + " " + s)
			continue
		}
		if len(p.pieces) == 0 {
			continue
		}
		g.out = append(g.out, Write{Cmd: g.c, Path: p, Dir: g.dir, What: "git " + what})
	}
}

// globals reads the options before the subcommand: -C moves the folder;
// another work tree, or options st cannot read, may write anywhere. ok
// is false when nothing more is to be read.
func (g *gitWriter) globals(args []Arg) ([]Arg, bool) {
	for len(args) > 0 {
		s, ok := args[0].Text()
		if !ok {
			g.tree("(options st cannot read)")
			return nil, false
		}
		if !strings.HasPrefix(s, "-") {
			break
		}
		args = args[1:]
		switch {
		case s == "-C" && len(args) > 0:
			g.dir = JoinDir(g.dir, args[0])
			args = args[1:]
		case s == "--work-tree" || s == "--git-dir" || strings.HasPrefix(s, "--work-tree=") || strings.HasPrefix(s, "--git-dir="):
			// Another work tree: where it writes is its own matter.
			g.tree("--work-tree")
			return nil, false
		case s == "-c" || s == "--namespace" || s == "--config-env" || s == "--super-prefix":
			if len(args) > 0 {
				args = args[1:]
			}
		}
	}
	return args, true
}

func (g *gitWriter) checkout(args []Arg, sep int) {
	ops, opts := parseArgs(args, "bBU", []string{"--orphan", "--conflict", "--pathspec-from-file"})
	switch _, branch := hasOpt(opts, "-b", "-B", "--orphan"); {
	case branch && sep < 0:
		if len(ops) > 1 {
			g.tree("checkout -b") // a new branch from another commit
		}
	case sep >= 0:
		if len(args[sep+1:]) == 0 {
			g.tree("checkout --")
		}
		g.paths("checkout", args[sep+1:])
	case len(ops) > 0:
		// Without "--" a word may be a branch: switching branches
		// rewrites files across the tree.
		g.tree("checkout " + ops[0].String())
		g.paths("checkout", ops)
	}
}

func (g *gitWriter) reset(args []Arg, sep int) {
	if sep >= 0 {
		g.paths("reset", args[sep+1:])
		return
	}
	ops, opts := parseArgs(args, "", []string{"--pathspec-from-file"})
	if _, ok := hasOpt(opts, "--hard", "--merge", "--keep"); ok || len(ops) <= 1 {
		g.tree("reset")
		return
	}
	g.paths("reset", ops[1:])
}

func (g *gitWriter) stash(args []Arg, sep int) {
	if len(args) == 0 {
		g.tree("stash")
		return
	}
	verb, _ := args[0].Text()
	switch verb {
	case "list", "show", "drop", "clear", "create", "store":
		return
	case "push", "save", "-u", "-a", "-k", "-p", "--include-untracked", "--keep-index", "-m", "--message":
		if sep >= 0 {
			g.paths("stash", args[sep+1:])
			return
		}
		if verb == "push" {
			if ops, _ := parseArgs(args[1:], "m", []string{"--message", "--pathspec-from-file"}); len(ops) > 0 {
				g.paths("stash", ops)
				return
			}
		}
	}
	g.tree("stash " + verb)
}

// apply: git apply writes the files its patch names, when st can read the
// patch (standard input); a patch file st does not read may name any.
func (g *gitWriter) apply(args []Arg) {
	ops, opts := parseArgs(args, "pC", []string{"--directory", "--include", "--exclude"})
	if _, ok := hasOpt(opts, "--check", "--stat", "--numstat", "--summary"); ok {
		if _, apply := hasOpt(opts, "--apply"); !apply {
			return
		}
	}
	text, ok := g.c.Stdin.Text()
	if len(ops) > 0 || !ok {
		g.tree("apply")
		return
	}
	for _, p := range DiffPaths(text) {
		g.out = append(g.out, Write{Cmd: g.c, Path: Lit(p), Dir: g.dir, Root: true, What: "git apply"})
	}
}

// gitChangesTree: the other git commands that rewrite the work tree
// (rebase, merge, am, pull...), unless only asked about their state.
func gitChangesTree(sub string, args []Arg) bool {
	has := func(words ...string) bool {
		return slices.ContainsFunc(args, func(a Arg) bool { return slices.Contains(words, a.String()) })
	}
	switch sub {
	case "bisect":
		if len(args) > 0 {
			v := args[0].String()
			return v != "log" && v != "visualize" && v != "view" && v != "terms"
		}
		return true
	case "merge", "rebase", "cherry-pick", "revert", "am":
		return !has("--quit", "--show-current-patch")
	case "read-tree":
		return has("-u")
	case "pull", "sparse-checkout", "checkout-index", "filter-branch":
		return true
	}
	return false
}
