package worktree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShellOutsideUnread: a program st cannot read, given a path outside
// the scope, may write there, and is refused with what to do (issue 31's
// five, and programs of the same kind); the readers st knows, the writers
// it judges, and an unknown program given only paths inside the scope
// keep their verdicts.
func TestShellOutsideUnread(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "repo")
	for _, d := range []string{"src", "other"} {
		must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(root, "notes"), nil, 0o644))
	scope := Scope{"src/**"}
	src := filepath.Join(root, "src")
	for _, c := range []struct {
		cwd, cmd string
		refused  string // the path named, "" when it passes
	}{
		{root, "sqlite3 other/db 'delete from t'", "other/db"},
		{root, "ex -sc '%d|x' other/f", "other/f"},
		{root, "split -l1 src/a other/", "other/"},
		{root, "cmake -E remove other/f", "other/f"},
		{root, "zip -r other/z.zip src", "other/z.zip"},
		{src, "sqlite3 ../other/db .dump", "../other/db"},
		{src, "mytool --out=../other/x a.go", "../other/x"},
		{root, "sudo sqlite3 other/db vacuum", "other/db"},
		{root, "bash -c 'zip -r other/z.zip src'", "other/z.zip"},
		{root, "sqlite3 notes vacuum", "notes"}, // a file there, named without a /
		{root, "python3 tools/gen.py other/out.txt", "other/out.txt"},
		{root, "vim -c 'wq' other/f", "other/f"},
		{root, "go generate ./other/...", "./other/..."},
		{root, "go build -o other/bin ./src", "other/bin"},
		// Readers, judged writers, and paths inside the scope.
		{root, "cat other/f", ""},
		{root, "grep -rn TODO other/ src/", ""},
		{root, "ls -la other", ""},
		{root, "wc -l other/* && diff other/a src/a && head -3 notes", ""},
		{root, "awk '{print $1}' other/x.csv", ""},
		{root, "sed -n 1,5p other/f", ""},
		{root, "find other -name '*.go'", ""},
		{root, "git diff other/", ""},
		{root, "go test ./... && go vet ./other/...", ""},
		{root, "python3 tools/gen.py", ""},
		{root, `python3 -c 'print(open("other/x").read())'`, ""},
		{root, "sqlite3 src/db 'select 1'", ""},
		{root, "ex -sc '%s/a/b/|x' src/f", ""},
		{src, "split -l1 a.go part-", ""},
		{root, "curl -s https://example.com/a/b", ""},
		{root, "f() { cat \"$1\"; }; f other/x", ""},
		{root, "sqlite3 $DB vacuum", ""}, // a path st cannot know is not judged
	} {
		out, err := scope.ShellOutside(root, c.cwd, c.cmd)
		if err != nil {
			t.Errorf("ShellOutside(%q): %v", c.cmd, err)
			continue
		}
		got := strings.Join(out, "; ")
		switch {
		case c.refused == "" && got != "":
			t.Errorf("ShellOutside(%q) in %s = %q, want it through", c.cmd, strings.TrimPrefix(c.cwd, root), got)
		case c.refused != "" && !strings.HasPrefix(got, c.refused+" ("):
			t.Errorf("ShellOutside(%q) in %s = %q, want %s refused", c.cmd, strings.TrimPrefix(c.cwd, root), got, c.refused)
		case c.refused != "" && !strings.Contains(got, "which st cannot read: it may write there; ask your coordinator to widen --owns"):
			t.Errorf("ShellOutside(%q) = %q: it does not say why, or what to do", c.cmd, got)
		}
	}
}
