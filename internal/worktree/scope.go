package worktree

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Scope is what a worker may change: globs relative to the repository root
// (see glob.go for the syntax). An empty scope allows everything, because a
// worker started without --owns is not limited.
type Scope []string

// compiled returns the automata of the scope's valid globs; an empty scope
// is "**". Invalid globs (refused by ValidGlob at start) match nothing.
func (s Scope) compiled() []*nfa {
	if len(s) == 0 {
		n, _ := compileGlob("**")
		return []*nfa{n}
	}
	out := make([]*nfa, 0, len(s))
	for _, g := range s {
		if ValidGlob(g) != nil {
			continue
		}
		if n, err := compileGlob(g); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// Allows reports whether the scope lets a worker change relPath, a path
// relative to the repository root. A path outside the repository ("../x",
// or absolute) is allowed only by an empty scope.
func (s Scope) Allows(relPath string) bool {
	if len(s) == 0 {
		return true
	}
	return allows(s.compiled(), relPath)
}

// allows is Allows with the globs compiled once, for loops over files.
func allows(ns []*nfa, relPath string) bool {
	p := cleanRel(relPath)
	if p == "" || p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/") {
		return false
	}
	for _, n := range ns {
		if n.match(p) {
			return true
		}
	}
	return false
}

// Unmatched lists the globs of the scope that match none of files (the
// repository's files). That is allowed, since a worker may create them,
// but often a typo worth telling the user about.
func (s Scope) Unmatched(files []string) []string {
	var out []string
	for _, g := range s {
		one := Scope{g}.compiled()
		found := false
		for _, f := range files {
			if allows(one, f) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, g)
		}
	}
	return out
}

// Overlap reports whether some path could be covered by both scopes, and
// gives one for the message: a file of files (the repository's files) that
// both allow if there is one, else a path both globs could match, such as
// "src/x_test.go" for "src/**" and "**/*_test.go". Unlike comparing the
// globs' literal prefixes, this is exact: "docs/*.md" and "docs/*.txt" do
// not overlap. An empty scope covers everything, so it overlaps any scope.
func Overlap(a, b Scope, files []string) (string, bool) {
	ca, cb := a.compiled(), b.compiled()
	for _, f := range files {
		if allows(ca, f) && allows(cb, f) {
			return f, true
		}
	}
	for _, na := range ca {
		for _, nb := range cb {
			if p, ok := intersect(na, nb); ok {
				return p, true
			}
		}
	}
	return "", false
}

// Outside lists the changed paths the scope does not allow, sorted; for a
// rename both the old and the new path must be allowed, since the old file
// is deleted.
func Outside(s Scope, changes []Change) []string {
	if len(s) == 0 {
		return nil
	}
	ns := s.compiled()
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if p != "" && !seen[p] && !allows(ns, p) {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, c := range changes {
		add(c.Path)
		add(c.From)
	}
	sort.Strings(out)
	return out
}

// Rel turns a path an agent's hook names (absolute, or relative to the
// agent's cwd, possibly starting with "~/") into a path relative to the
// repository root, with '/' separators. It reports false when the path is
// outside the repository; a scope refuses those. Symbolic links are
// resolved only when the plain path is outside, so that /tmp/repo/x and
// /private/tmp/repo/x (macOS) or a cwd reached through a link still count
// as inside.
func Rel(root, cwd, p string) (string, bool) {
	if p == "" || root == "" {
		return "", false
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", false
		}
		p = filepath.Join(home, p[1:])
	}
	root = filepath.Clean(root)
	if !filepath.IsAbs(p) {
		switch {
		case cwd == "":
			cwd = root
		case !filepath.IsAbs(cwd):
			cwd = filepath.Join(root, cwd)
		}
		p = filepath.Join(cwd, p)
	}
	p = filepath.Clean(p)
	if rel, ok := relInside(root, p); ok {
		return rel, true
	}
	rroot, err := filepath.EvalSymlinks(root)
	if err != nil {
		rroot = root
	}
	return relInside(rroot, resolveExisting(p))
}

func relInside(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// resolveExisting resolves the symbolic links of the longest part of p that
// exists; the rest (a file about to be created) is kept as written.
func resolveExisting(p string) string {
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		} else if !errors.Is(err, os.ErrNotExist) {
			return p
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
