package worktree

import (
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
// repository root, with '/' separators, judged where it lands: symbolic
// links on the way are followed (a link inside the tree that points out
// of it leads out). It reports false when the path is outside the
// repository; a scope refuses those. The root may itself be reached
// through links (/tmp and /private/tmp on macOS).
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
	return relInside(resolve(root), resolve(p))
}

func relInside(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// resolve follows the symbolic links of an absolute path component by
// component, as the kernel would when the path is written: a link to a
// file that does not exist yet leads to where that file would be made.
// What does not exist is kept as written.
func resolve(p string) string {
	p = filepath.Clean(p)
	if !filepath.IsAbs(p) {
		return p
	}
	out := string(filepath.Separator)
	rest := strings.Split(strings.TrimPrefix(p, out), out)
	for hops := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			out = filepath.Dir(out)
			continue
		}
		next := filepath.Join(out, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return filepath.Join(append([]string{next}, rest...)...)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			out = next
			continue
		}
		if hops++; hops > 40 {
			return filepath.Join(append([]string{next}, rest...)...)
		}
		t, err := os.Readlink(next)
		if err != nil {
			return filepath.Join(append([]string{next}, rest...)...)
		}
		if filepath.IsAbs(t) {
			out = string(filepath.Separator)
		}
		rest = append(strings.Split(t, string(filepath.Separator)), rest...)
	}
	return out
}
