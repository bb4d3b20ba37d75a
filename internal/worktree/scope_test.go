package worktree

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestScopeAllows(t *testing.T) {
	t.Parallel()
	cases := []struct {
		glob  string
		path  string
		allow bool
	}{
		{"src/**", "src/a.go", true},
		{"src/**", "src/x/y/z.go", true},
		{"src/**", "src", true},
		{"src/**", "srcx/a.go", false},
		{"src/**", "lib/src/a.go", false},
		{"src/", "src/a/b.go", true},
		{"src", "src/a/b.go", true}, // a plain name is the folder too
		{"src", "src", true},
		{"src", "srcx", false},
		{"docs/*.md", "docs/a.md", true},
		{"docs/*.md", "docs/.md", true},
		{"docs/*.md", "docs/sub/a.md", false},
		{"docs/*.md", "docs/a.txt", false},
		{"README.md", "README.md", true},
		{"README.md", "docs/README.md", false},
		{"**/*_test.go", "a_test.go", true},
		{"**/*_test.go", "x/y/a_test.go", true},
		{"**/*_test.go", "x/y/a.go", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/bb", false},
		{"a/**/b", "ab", false},
		{"**", "anything/at/all", true},
		{"*", "top.txt", true},
		{"*", "dir/file", false},
		{"?.go", "a.go", true},
		{"?.go", "ab.go", false},
		{"[abc].go", "b.go", true},
		{"[abc].go", "d.go", false},
		{"[!abc].go", "d.go", true},
		{"[^abc].go", "a.go", false},
		{"[a-c]x", "bx", true},
		{`\*.go`, "*.go", true},
		{`\*.go`, "a.go", false},
		{"./src/**", "src/a.go", true},
		{"src//x.go", "src/x.go", true},
		{"src/**", "./src/a.go", true},
		{"src/**", "src/../etc/passwd", false},
		{"src/**", "../src/a.go", false},
		{"src/**", "/src/a.go", false},
		{"src/**", "", false},
		{"*.go", "ü.go", true},
	}
	for _, c := range cases {
		if got := (Scope{c.glob}).Allows(c.path); got != c.allow {
			t.Errorf("Scope{%q}.Allows(%q) = %v, want %v", c.glob, c.path, got, c.allow)
		}
	}
	if !(Scope{}).Allows("anything") || !(Scope(nil)).Allows("../outside") {
		t.Error("an empty scope must allow everything")
	}
	s := Scope{"docs/**", "README.md"}
	if !s.Allows("README.md") || !s.Allows("docs/x") || s.Allows("src/x") {
		t.Error("a scope of two globs")
	}
}

func TestValidGlob(t *testing.T) {
	t.Parallel()
	cases := []struct {
		glob string
		bad  string // part of the message; "" means valid
	}{
		{"src/**", ""},
		{"docs/*.md", ""},
		{"README.md", ""},
		{"**/*_test.go", ""},
		{"src/", ""},
		{"[a-z]*.go", ""},
		{"**", ""},
		{"", "empty"},
		{"   ", "empty"},
		{"/etc/passwd", "absolute"},
		{"~/x", "absolute"},
		{"../other/**", `".."`},
		{"src/../../x", `".."`},
		{"src/**.go", "whole path segment"},
		{"a**", "whole path segment"},
		{"[abc", "closing"},
		{"[]", "closing"},
		{"[z-a]", "backwards"},
		{"[a/b]", "'/'"},
		{`x\`, "quotes nothing"},
		{".", "names no path"},
		{"./", "names no path"},
	}
	for _, c := range cases {
		err := ValidGlob(c.glob)
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("ValidGlob(%q) = %v, want nil", c.glob, err)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("ValidGlob(%q) = %v, want an error with %q", c.glob, err, c.bad)
		}
	}
	if err := ValidGlob("src/**.go"); err == nil || !strings.Contains(err.Error(), `"src/**/*.go"`) {
		t.Errorf("the advice for src/**.go: %v", err)
	}
}

func TestOverlap(t *testing.T) {
	t.Parallel()
	files := []string{"README.md", "docs/guide.md", "src/main.go", "src/main_test.go", "src/util/u.go"}
	cases := []struct {
		a, b    Scope
		overlap bool
		example string // "" means any
	}{
		{Scope{"src/**"}, Scope{"docs/**"}, false, ""},
		{Scope{"src/**"}, Scope{"src/util/**"}, true, "src/util/u.go"},
		{Scope{"src/**"}, Scope{"**/*_test.go"}, true, "src/main_test.go"},
		{Scope{"docs/*.md"}, Scope{"docs/*.txt"}, false, ""},
		{Scope{"docs/*.md"}, Scope{"README.md"}, false, ""},
		{Scope{"docs/*.md"}, Scope{"docs/new-*"}, true, ""}, // no such file, still possible
		{Scope{"lib/**"}, Scope{"lib/*.c"}, true, ""},
		{Scope{"lib/a*"}, Scope{"lib/b*"}, false, ""},
		{Scope{"lib/[a-m]*"}, Scope{"lib/[n-z]*"}, false, ""},
		{Scope{"lib/[a-m]*"}, Scope{"lib/[m-z]*"}, true, ""},
		{Scope{"x/?"}, Scope{"x/??"}, false, ""},
		{Scope{"src"}, Scope{"src/main.go"}, true, "src/main.go"},
		{Scope{"a/**/z.go"}, Scope{"**/b/*.go"}, true, ""},
		{Scope{}, Scope{"docs/**"}, true, "docs/guide.md"},
		{Scope{"README.md", "src/**"}, Scope{"docs/**", "README.md"}, true, "README.md"},
		{Scope{"**"}, Scope{"nothing/yet"}, true, ""},
	}
	for _, c := range cases {
		ex, ok := Overlap(c.a, c.b, files)
		if ok != c.overlap {
			t.Errorf("Overlap(%q, %q) = %q, %v; want %v", c.a, c.b, ex, ok, c.overlap)
			continue
		}
		if !ok {
			continue
		}
		if c.example != "" && ex != c.example {
			t.Errorf("Overlap(%q, %q) example = %q, want %q", c.a, c.b, ex, c.example)
		}
		// Whatever the example, both scopes must allow it.
		if !c.a.Allows(ex) || !c.b.Allows(ex) {
			t.Errorf("Overlap(%q, %q) example %q is not allowed by both", c.a, c.b, ex)
		}
		// Symmetric.
		if _, ok2 := Overlap(c.b, c.a, files); !ok2 {
			t.Errorf("Overlap is not symmetric for %q, %q", c.a, c.b)
		}
	}
	// Without files, the automata still find a readable example.
	if ex, ok := Overlap(Scope{"src/**"}, Scope{"src/*.go"}, nil); !ok || ex != "src/x.go" {
		t.Errorf("example without files = %q, %v", ex, ok)
	}
}

func TestOutsideAndUnmatched(t *testing.T) {
	t.Parallel()
	s := Scope{"src/**", "docs/*.md"}
	changes := []Change{
		{Path: "src/a.go", Status: Modified},
		{Path: "docs/x.md", Status: Added},
		{Path: "Makefile", Status: Modified},
		{Path: "src/b.go", Status: Renamed, From: "lib/b.go"},
		{Path: "docs/deep/y.md", Status: Deleted},
	}
	if got, want := Outside(s, changes), []string{"Makefile", "docs/deep/y.md", "lib/b.go"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Outside = %v, want %v", got, want)
	}
	if got := Outside(nil, changes); len(got) != 0 {
		t.Errorf("Outside(empty scope) = %v", got)
	}
	files := []string{"src/a.go", "README.md"}
	if got := (Scope{"src/**", "docs/*.md", "READMEE.md"}).Unmatched(files); !reflect.DeepEqual(got, []string{"docs/*.md", "READMEE.md"}) {
		t.Errorf("Unmatched = %v", got)
	}
}

func TestRel(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "repo")
	os.MkdirAll(filepath.Join(root, "src"), 0o755)
	link := filepath.Join(base, "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	cases := []struct {
		root, cwd, p string
		want         string
		ok           bool
	}{
		{root, root, "src/a.go", "src/a.go", true},
		{root, root, filepath.Join(root, "src/a.go"), "src/a.go", true},
		{root, filepath.Join(root, "src"), "a.go", "src/a.go", true},
		{root, filepath.Join(root, "src"), "../README.md", "README.md", true},
		{root, filepath.Join(root, "src"), "../../x", "", false},
		{root, root, "/etc/passwd", "", false},
		{root, root, ".", ".", true},
		{root, "", "a.go", "a.go", true},
		{root, "src", "a.go", "src/a.go", true}, // a relative cwd is from the root
		{root, root, "", "", false},
		{root, link, "src/new.go", "src/new.go", true},              // cwd through a link
		{root, root, filepath.Join(link, "x/y.go"), "x/y.go", true}, // path through a link, not existing yet
		{link, root, filepath.Join(root, "a"), "a", true},           // root through a link
		{root, root, filepath.Join(base, "repo2", "a"), "", false},  // a sibling with the same prefix
		{root, root, "~/x", "", home != "" && strings.HasPrefix(home, root)},
	}
	for _, c := range cases {
		got, ok := Rel(c.root, c.cwd, c.p)
		if got != c.want || ok != c.ok {
			t.Errorf("Rel(%q, %q, %q) = %q, %v; want %q, %v", c.root, c.cwd, c.p, got, ok, c.want, c.ok)
		}
	}
}

// FuzzOverlap checks the automata against themselves: an example of an
// overlap is allowed by both globs, and matching never panics.
func FuzzOverlap(f *testing.F) {
	for _, s := range [][3]string{
		{"src/**", "**/*_test.go", "src/a_test.go"},
		{"docs/*.md", "docs/[a-c]?.md", "docs/ab.md"},
		{"a/**/b", "a/*/b", "a/x/b"},
		{"[!x]", "[^y]", "z"},
		{`\**`, "*", "*a"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, a, b, p string) {
		if ValidGlob(a) != nil || ValidGlob(b) != nil {
			return
		}
		sa, sb := Scope{a}, Scope{b}
		sa.Allows(p)
		ex, ok := Overlap(sa, sb, nil)
		if ok && (!sa.Allows(ex) || !sb.Allows(ex)) {
			t.Fatalf("Overlap(%q, %q) example %q not allowed by both", a, b, ex)
		}
		if !ok && sa.Allows(p) && sb.Allows(p) {
			t.Fatalf("Overlap(%q, %q) = false, but both allow %q", a, b, p)
		}
	})
}

// TestShellOutside: the escapes of issue 13, each refused, and the
// writes inside the scope let through. The repository is a folder with
// the links the escapes use.
func TestShellOutside(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "repo")
	for _, d := range []string{"src/sub", "docs", "elsewhere"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.MkdirAll(filepath.Join(base, "outside"), 0o755)
	// A folder inside src/ that is a link out of the repository, and one
	// back to its root.
	must(t, os.Symlink(filepath.Join(base, "outside"), filepath.Join(root, "src", "ext")))
	must(t, os.Symlink("..", filepath.Join(root, "src", "up")))
	// A dangling link to a file outside the scope.
	must(t, os.Symlink("../docs/new.md", filepath.Join(root, "src", "dangling")))
	scope := Scope{"src/**"}
	src := filepath.Join(root, "src")
	sub := filepath.Join(root, "src", "sub")
	cases := []struct {
		cwd, cmd string
		refused  bool
	}{
		// Repository-wide git commands, from a folder inside the scope.
		{src, "git reset --hard", true},
		{src, "git stash", true},
		{src, "git checkout main", true},
		{src, "git checkout HEAD~3 -- :/", true},
		{src, "git clean -fdx", true},
		{src, "git restore :/", true},
		{src, "git switch main", true},
		{sub, "git rebase main", true},
		{sub, "git merge feature", true},
		{sub, "git am < fix.patch", true},
		{sub, "git apply fix.patch", true},
		{sub, "git -C .. reset --hard", true},
		{sub, "cd /tmp && git -C " + root + " stash", true},
		// ... and the same commands limited to paths inside the scope.
		{src, "git checkout -- a.go", false},
		{src, "git restore sub/b.go", false},
		{src, "git stash push -- sub", false},
		{root, "git checkout HEAD~1 -- src/a.go", false},
		{root, "git apply <<'EOF'\n--- a/src/a.go\n+++ b/src/a.go\n@@ -1 +1 @@\n-x\n+y\nEOF", false},
		{root, "git apply <<'EOF'\n--- a/docs/x.md\n+++ b/docs/x.md\n@@ -1 +1 @@\n-x\n+y\nEOF", true},
		{src, "git status && git diff && git log -1", false},
		// Writes judged where they land.
		{root, "echo x > src/up/outside.txt", true},
		{src, "echo x > up/docs/x.md", true},
		{src, "ln -s ../outside.txt l2; echo hi > l2", true},
		{src, "ln -s ../docs d2 && echo hi > d2/x.md", true},
		{root, "echo x > src/ext/x", true},
		{src, "touch ext/y", true},
		{src, "echo x > dangling", true},
		{src, "env -C .. rm README.md", true},
		{src, "cd .. && rm README.md", true},
		{src, "x=../README.md; rm $x", true},
		{root, "find . -name '*.tmp' -exec rm {} \\;", true},
		{root, "find src -name '*.tmp' -exec rm {} +", false},
		{src, "echo x > a.go && mkdir -p sub/deeper && ln -s a.go sub/b.go", false},
		{src, "cp a.go sub/c.go; sed -i s/a/b/ sub/c.go", false},
		{src, "echo x > $OUT", false}, // a path st cannot know is not judged
		// Writes of rsync, tar, unzip, patch, awk and one-liners (issue 23).
		{src, `python3 -c "open('../README.md','w').write('x')"`, true},
		{src, `node -e 'require("fs").writeFileSync("../x", "")'`, true},
		{src, `perl -e 'open(my $f, ">", "../x")'`, true},
		{src, "rsync -a ./ ../docs/", true},
		{root, `awk '{print > "docs/x.md"}' src/a.go`, true},
		{root, "tar -xf x.tar", true},
		{src, "tar -czf ../all.tgz .", true},
		{src, "unzip -o x.zip -d ../docs", true},
		{src, "patch -p1 < fix.patch", true},
		{root, "patch -p1 <<'EOF'\n--- a/docs/x.md\n+++ b/docs/x.md\n@@ -1 +1 @@\n-x\n+y\nEOF", true},
		{root, "tar -xf x.tar -C src", false},
		{src, "unzip -o x.zip -d sub", false},
		{root, "rsync -a /tmp/gen/ src/gen/", false},
		{root, "patch -p1 <<'EOF'\n--- a/src/a.go\n+++ b/src/a.go\n@@ -1 +1 @@\n-x\n+y\nEOF", false},
		{src, `python3 -c "open('sub/o.txt','w')"`, false},
		{src, `awk '{print > "sub/x"}' a.go`, false},
		{src, `python3 -c 'print(open("../README.md").read())'`, false},
	}
	for _, c := range cases {
		out, err := scope.ShellOutside(root, c.cwd, c.cmd)
		if err != nil {
			t.Errorf("ShellOutside(%q) in %s: %v", c.cmd, c.cwd, err)
			continue
		}
		if (len(out) > 0) != c.refused {
			t.Errorf("ShellOutside(%q) in %s = %q, want refused=%v", c.cmd, strings.TrimPrefix(c.cwd, root), out, c.refused)
		}
	}
	// Edit and Write paths land through links too.
	for p, ok := range map[string]bool{
		"src/up/outside.txt": false, "src/ext/x": false, "src/dangling": false,
		"src/sub/new.go": true, "src/up/src/a.go": true,
	} {
		rel, in := Rel(root, root, p)
		if got := in && scope.Allows(rel); got != ok {
			t.Errorf("Edit %s: allowed=%v (as %q), want %v", p, got, rel, ok)
		}
	}
	// A command st cannot parse is an error: the caller refuses it.
	if _, err := scope.ShellOutside(root, src, "echo 'unterminated > x"); err == nil {
		t.Error("an unparsable command gave no error")
	}
	// Without a scope nothing is outside.
	if out, _ := (Scope{}).ShellOutside(root, src, "git reset --hard"); len(out) != 0 {
		t.Errorf("empty scope: %q", out)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestPathsOutside: the paths an edit tool names (Claude's Edit and Write)
// and a Codex patch's files, judged as the shell's writes are.
func TestPathsOutside(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	scope := Scope{"src/**"}
	src := filepath.Join(root, "src")
	if got := scope.PathsOutside(root, src, "a.go", "../README.md", "", filepath.Join(root, "docs/x.md")); !reflect.DeepEqual(got,
		[]string{"../README.md", filepath.Join(root, "docs/x.md")}) {
		t.Errorf("PathsOutside = %q", got)
	}
	if got := (Scope{}).PathsOutside(root, src, "/etc/passwd"); got != nil {
		t.Errorf("an empty scope refused %q", got)
	}
	patch := "*** Begin Patch\n*** Update File: a.go\n*** Add File: ../docs/new.md\n+x\n*** End Patch\n"
	if got := scope.PatchOutside(root, src, patch); !reflect.DeepEqual(got, []string{"../docs/new.md"}) {
		t.Errorf("PatchOutside = %q", got)
	}
}
