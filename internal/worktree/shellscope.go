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
	ns := s.compiled()
	whole := s.wholeTree()
	var bad []string
	seen := map[string]bool{}
	out := func(what string) {
		if !seen[what] {
			seen[what] = true
			bad = append(bad, what)
		}
	}
	links := map[string]string{}
	// judge reports whether an absolute path lands inside the scope.
	judge := func(abs string) bool {
		rel, ok := Rel(root, "", followLinks(abs, links))
		return ok && allows(ns, rel)
	}
	for _, w := range shell.Writes(sc.Cmds) {
		dir, dirKnown := w.Dir.Text()
		if w.Root {
			// Paths from the repository's root (git's ":/x", a patch).
			dir, dirKnown = root, true
		}
		if w.Tree {
			if whole {
				continue
			}
			if !dirKnown {
				out(w.What + " (in a folder st cannot tell)")
				continue
			}
			if _, inside := Rel(root, "", dir); !inside {
				out(w.What + " (in " + dir + ")")
				continue
			}
			out(w.What + " (it changes files across the whole repository)")
			continue
		}
		if found := foundUnder(w.Path); found != nil {
			// {} of find -exec: any path under the folders searched, so
			// each folder must be in the scope as a whole (src/** allows
			// src).
			for _, f := range found {
				r, ok := f.Text()
				if !ok || !dirKnown && !strings.HasPrefix(r, "/") {
					continue
				}
				if !judge(absPath(dir, r)) {
					out(r + " (" + w.What + " under it)")
				}
			}
			continue
		}
		p, ok := w.Path.Text()
		if !ok || p == "" {
			continue
		}
		if !dirKnown && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") {
			continue
		}
		abs := absPath(dir, p)
		var t string
		if w.Link != nil {
			t, ok = w.Link.Text()
			if !ok {
				continue
			}
			// ln TARGET DIR makes the link inside DIR.
			if fi, err := os.Stat(resolve(followLinks(abs, links))); err == nil && fi.IsDir() {
				abs = filepath.Join(abs, filepath.Base(t))
				p = filepath.Join(p, filepath.Base(t))
			}
		}
		if !judge(abs) {
			out(p)
		}
		if w.Link != nil {
			target := absPath(dir, t)
			if w.Symbolic && !strings.HasPrefix(t, "/") {
				target = filepath.Join(filepath.Dir(abs), t)
			}
			links[filepath.Clean(abs)] = target
			if !judge(target) {
				out(p + " -> " + t)
			}
		}
	}
	if strings.Contains(command, "*** Begin Patch") {
		// A patch anywhere in the command, however it reaches apply_patch.
		for _, p := range s.PatchOutside(root, cwd, command) {
			out(p)
		}
	}
	return bad, nil
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
