package worktree

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/sophonz/st/internal/shell"
)

// ShellOutside lists what a shell command would change outside the scope,
// as internal/shell reads it: the files its programs and redirections
// write, judged where they land (the command's folder, git -C, links the
// command makes on the way, links on disk), and the git commands that
// change files across the whole repository (reset, stash, checkout BRANCH,
// clean, restore, switch, rebase, merge, am, apply...) whatever folder
// they run in. root is the repository the scope is relative to, cwd the
// agent's folder (absolute). An error means st could not read the
// command; the caller refuses it.
//
// A program the reader does not know (shell.Knows) may write any path it
// is given: one given a path outside the scope is refused (unread).
//
// What the text cannot tell (a path from a variable of the environment,
// the output of a program) is left out: scopes are a guard rail for
// cooperating agents, not a sandbox.
func (s Scope) ShellOutside(root, cwd, command string) ([]string, error) {
	if len(s) == 0 {
		return nil, nil
	}
	if cwd == "" || !filepath.IsAbs(cwd) {
		cwd = filepath.Join(root, cwd)
	}
	sc := shell.Read(command, shell.Env{Cwd: cwd})
	if sc.Err != nil {
		return nil, sc.Err
	}
	j := &shellJudge{root: root, ns: s.compiled(), whole: s.wholeTree(), seen: map[string]bool{}, links: map[string]string{}}
	for _, w := range shell.Writes(sc.Cmds) {
		j.write(w)
	}
	funcs := functions(sc.Cmds)
	for _, c := range sc.Cmds {
		j.unread(c, funcs)
	}
	if strings.Contains(command, "*** Begin Patch") {
		// A patch anywhere in the command, however it reaches apply_patch.
		for _, p := range s.PatchOutside(root, cwd, command) {
			j.out(p)
		}
	}
	return j.bad, nil
}

// shellJudge judges the writes of one command against a scope.
type shellJudge struct {
	root  string
	ns    []*nfa
	whole bool // the scope allows every path
	bad   []string
	seen  map[string]bool
	links map[string]string // links the command made before, by path
}

func (j *shellJudge) out(what string) {
	if !j.seen[what] {
		j.seen[what] = true
		j.bad = append(j.bad, what)
	}
}

// inside reports whether an absolute path lands inside the scope.
func (j *shellJudge) inside(abs string) bool {
	rel, ok := Rel(j.root, "", followLinks(abs, j.links))
	return ok && allows(j.ns, rel)
}

// write judges one write where it lands.
func (j *shellJudge) write(w shell.Write) {
	dir, dirKnown := w.Dir.Text()
	if w.Root {
		// Paths from the repository's root (git's ":/x", a patch).
		dir, dirKnown = j.root, true
	}
	if w.Tree {
		j.tree(w, dir, dirKnown)
		return
	}
	if found := foundUnder(w.Path); found != nil {
		// {} of find -exec: any path under the folders searched, so
		// each folder must be in the scope as a whole (src/** allows
		// src).
		for _, f := range found {
			r, ok := f.Text()
			if ok && (dirKnown || strings.HasPrefix(r, "/")) && !j.inside(absPath(dir, r)) {
				j.out(r + " (" + w.What + " under it)")
			}
		}
		return
	}
	p, ok := w.Path.Text()
	if !ok || p == "" || !dirKnown && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") {
		return
	}
	abs := absPath(dir, p)
	if w.Link == nil {
		if !j.inside(abs) {
			j.out(p)
		}
		return
	}
	j.link(w, dir, p, abs)
}

// tree judges a write across the whole work tree of the repository at
// dir: refused unless the scope is the whole tree.
func (j *shellJudge) tree(w shell.Write, dir string, dirKnown bool) {
	switch _, inside := Rel(j.root, "", dir); {
	case j.whole:
	case !dirKnown:
		j.out(w.What + " (in a folder st cannot tell)")
	case !inside:
		j.out(w.What + " (in " + dir + ")")
	default:
		j.out(w.What + " (it changes files across the whole repository)")
	}
}

// link judges a link the command makes, and where it points, and keeps
// it for the writes after it.
func (j *shellJudge) link(w shell.Write, dir, p, abs string) {
	t, ok := w.Link.Text()
	if !ok {
		return
	}
	// ln TARGET DIR makes the link inside DIR.
	if fi, err := os.Stat(resolve(followLinks(abs, j.links))); err == nil && fi.IsDir() {
		abs = filepath.Join(abs, filepath.Base(t))
		p = filepath.Join(p, filepath.Base(t))
	}
	if !j.inside(abs) {
		j.out(p)
	}
	target := absPath(dir, t)
	if w.Symbolic && !strings.HasPrefix(t, "/") {
		target = filepath.Join(filepath.Dir(abs), t)
	}
	j.links[filepath.Clean(abs)] = target
	if !j.inside(target) {
		j.out(p + " -> " + t)
	}
}

// PathsOutside lists the paths (as an edit tool names them) the scope does
// not allow, judged where they land.
func (s Scope) PathsOutside(root, cwd string, paths ...string) []string {
	if len(s) == 0 {
		return nil
	}
	var bad []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if rel, ok := Rel(root, cwd, p); !ok || !s.Allows(rel) {
			bad = append(bad, p)
		}
	}
	return bad
}

// PatchOutside lists the files of a Codex patch the scope does not allow.
func (s Scope) PatchOutside(root, cwd, patch string) []string {
	return s.PathsOutside(root, cwd, shell.PatchPaths(patch)...)
}

// wholeTree reports whether the scope allows every path.
func (s Scope) wholeTree() bool {
	for _, g := range s {
		if g == "**" || g == "./**" {
			return true
		}
	}
	return false
}

// foundUnder is the folders of a path that is find's {}.
func foundUnder(p shell.Arg) []shell.Arg {
	hs := p.Holes()
	if len(hs) != 1 || hs[0].Kind != shell.FromFound {
		return nil
	}
	return hs[0].Under
}

func absPath(dir, p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// followLinks applies the links the command made before (they are not on
// disk yet): the longest one that is a prefix of p.
func followLinks(p string, links map[string]string) string {
	p = filepath.Clean(p)
	for hops := 0; hops < 40; hops++ {
		best := ""
		for l := range links {
			if (p == l || strings.HasPrefix(p, l+string(filepath.Separator))) && len(l) > len(best) {
				best = l
			}
		}
		if best == "" {
			return p
		}
		p = filepath.Join(links[best], strings.TrimPrefix(p, best))
	}
	return p
}

// functions are the names of the shell functions the command defines and
// calls: the reader reads their bodies, so the call itself writes nothing.
func functions(cmds []*shell.Cmd) map[string]bool {
	out := map[string]bool{}
	for _, c := range cmds {
		for _, v := range c.Via {
			if name, ok := strings.CutPrefix(v, "function "); ok {
				out[name] = true
			}
		}
	}
	return out
}

// unread judges a program the reader does not know: it may write any path
// it is given, so every argument that names a path (a word with a / in
// it, or the name of a file or folder there), where it lands, must be in
// the scope. Its inline code (python -c) and, without one, its script
// (python3 tool.py) are what it runs, not what it writes.
func (j *shellJudge) unread(c *shell.Cmd, funcs map[string]bool) {
	name := c.Name()
	if len(c.Args) < 2 || name == "" || funcs[name] || shell.KnowsCmd(c) {
		return
	}
	dir, dirKnown := c.Dir.Text()
	skip := map[int]bool{}
	if shell.Interpreter(name) != "" {
		skip = runsOnly(c)
	}
	for i, a := range c.Args[1:] {
		s, ok := a.Text()
		if !ok || skip[i+1] {
			continue
		}
		if p, ok := pathWord(s, dir, dirKnown); ok && !j.inside(absPath(dir, p)) {
			j.out(p + " (given to " + name + ", which st cannot read: it may write there; ask your coordinator to widen --owns, " +
				"or work on a copy inside the scope)")
		}
	}
}

// runsOnly are the arguments of an interpreter that it runs: its inline
// code, or the script named first when there is none; vim's commands
// (-c, --cmd, +cmd), which are not paths.
func runsOnly(c *shell.Cmd) map[int]bool {
	out := map[int]bool{}
	if shell.Interpreter(c.Name()) == "vim" {
		for i, a := range c.Args {
			s := a.String()
			if s == "--cmd" || s == "-S" || strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.HasSuffix(s, "c") {
				out[i+1] = true
			}
			if strings.HasPrefix(s, "+") {
				out[i] = true
			}
		}
		return out
	}
	code := c.InlineCode()
	for i, a := range c.Args {
		for _, k := range code {
			if a.String() == k.String() {
				out[i] = true
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	for i, a := range c.Args[1:] {
		if s, ok := a.Text(); ok && !strings.HasPrefix(s, "-") {
			out[i+1] = true
			break
		}
	}
	return out
}

// pathWord is the path an argument names, if it names one: a word with a
// / in it (no spaces: text such as SQL is not a path), an option's value
// after = (--output=x/y), or the name of a file or folder that is there.
// URLs and devices are not paths it writes.
func pathWord(s, dir string, dirKnown bool) (string, bool) {
	if strings.HasPrefix(s, "-") {
		_, v, ok := strings.Cut(s, "=")
		if !ok {
			return "", false
		}
		s = v
	}
	if s == "" || strings.Contains(s, "://") || strings.HasPrefix(s, "/dev/") || strings.ContainsAny(s, "\n") {
		return "", false
	}
	if !dirKnown && !strings.HasPrefix(s, "/") {
		return "", false
	}
	if strings.Contains(s, "/") && !strings.ContainsAny(s, " \t") {
		return s, true
	}
	if _, err := os.Lstat(absPath(dir, s)); err == nil {
		return s, true
	}
	return "", false
}
