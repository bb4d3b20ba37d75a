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
