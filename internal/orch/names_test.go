package orch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sophonz/st/internal/api"
)

func TestTaskLine(t *testing.T) {
	tests := []struct{ stBin, task string }{
		{"/usr/local/bin/st", "/home/u/proj/tasks/api-tests.md"},
		{"/home/user name/bin/st", "/tmp/작업/task 1.md"},
		{"/bin/st", "/t"},
	}
	for _, tt := range tests {
		l := TaskLine(tt.stBin, tt.task)
		if len(l) >= 1000 {
			t.Errorf("TaskLine is %d characters", len(l))
		}
		if strings.HasPrefix(l, "/") || strings.HasPrefix(l, "$") {
			t.Errorf("TaskLine starts with a menu character: %q", l)
		}
		if !strings.Contains(l, QuotePath(tt.task)) || !strings.Contains(l, shellWord(tt.stBin)+" worker done --summary") {
			t.Errorf("TaskLine does not name the task %s and %s worker done: %q", tt.task, tt.stBin, l)
		}
		if err := CheckLine(l); err != nil {
			t.Errorf("CheckLine(TaskLine) = %v", err)
		}
	}
}

// TestTaskLineQuotesAPathWithSpaces: the task line names a path with a
// space in double quotes and st's path as one shell word, so that a
// reader takes each as one path.
func TestTaskLineQuotesAPathWithSpaces(t *testing.T) {
	l := TaskLine("/home/user name/bin/st", "/tmp/my tasks/task 1.md")
	for _, want := range []string{`the file "/tmp/my tasks/task 1.md" - read it`, `report with: '/home/user name/bin/st' worker done --summary`} {
		if !strings.Contains(l, want) {
			t.Errorf("TaskLine = %q; want %q in it", l, want)
		}
	}
	if l := TaskLine("/bin/st", "/t/a.md"); !strings.Contains(l, "the file /t/a.md - read it") || !strings.Contains(l, "with: /bin/st worker done") {
		t.Errorf("TaskLine of plain paths = %q; want them as they are", l)
	}
}

// TestCheckNameSaysWhichRule: a refused name is told which rule it breaks
// (its length, its first character, which characters), and the Try line
// states the same rule.
func TestCheckNameSaysWhichRule(t *testing.T) {
	tests := []struct{ name, want string }{
		{strings.Repeat("a", 41), "the name is 41 characters long; st takes at most 40"},
		{"-x", `the name "-x" starts with '-', which a command would read as an option`},
		{"--", `the name "--" starts with '-'`},
		{".", `the name "." starts with '.'`},
		{"..", `the name ".." starts with '.'`},
		{"", "the name is empty"},
		{"a b;c", `the name "a b;c" has characters that tmux or a shell would misread (' ' ';')`},
		{"a\u202eb", `has characters that tmux or a shell would misread ('\u202e')`},
	}
	for _, tt := range tests {
		err := CheckName("the name", tt.name, "--name api-tests")
		var ae *api.Error
		if !errors.As(err, &ae) || !strings.Contains(ae.Message, tt.want) {
			t.Errorf("CheckName(%q) = %v; want %q", tt.name, err, tt.want)
			continue
		}
		if ae.Hint != NameRule+", e.g. --name api-tests" {
			t.Errorf("CheckName(%q): Try: %q", tt.name, ae.Hint)
		}
	}
	for _, ok := range []string{"api-tests", "a.b_c", "_x", strings.Repeat("a", 40)} {
		if err := CheckName("the name", ok, ""); err != nil {
			t.Errorf("CheckName(%q) = %v; want it taken", ok, err)
		}
	}
}

func TestNameFromTask(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/home/u/tasks/api-tests.md", "api-tests"},
		{"/t/api_tests.txt", "api_tests"},
		{"/t/no-extension", "no-extension"},
		{"/t/two.dots.md", "two-dots"},
		{"/t/.hidden", "hidden"},
		{"/t/.hidden.md", "hidden"},
		{"/t/with space & more!.md", "with-space---more"},
		{"/t/작업.md", "worker"},
		{"/t/ab작업cd.md", "ab--cd"},
		{"/t/--x--.md", "x"},
		{"/t/__x__.md", "x"},
		{"/t/", "worker"},
		{"", "worker"},
		{"/t/" + strings.Repeat("a", 50) + ".md", strings.Repeat("a", 40)},
		{"relative.md", "relative"},
	}
	for _, tt := range tests {
		got := NameFromTask(tt.in)
		if got != tt.want {
			t.Errorf("NameFromTask(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if !ValidName(got) {
			t.Errorf("NameFromTask(%q) = %q, which ValidName refuses", tt.in, got)
		}
	}
}

func FuzzNameFromTask(f *testing.F) {
	for _, s := range []string{"/t/api.md", "/t/.x", "", "/", "/t/작업.md", "/t/" + strings.Repeat("-", 60) + "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		if n := NameFromTask(path); !ValidName(n) {
			t.Fatalf("NameFromTask(%q) = %q, which ValidName refuses", path, n)
		}
	})
}

func TestValidName(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"api", true},
		{"api-tests_2.b", true},
		{"_x", true},
		{"A9", true},
		{strings.Repeat("a", 40), true},
		{strings.Repeat("a", 41), false},
		{"", false},
		{"-x", false},
		{".x", false},
		{"a b", false},
		{"a/b", false},
		{"a:b", false},
		{"%1", false},
		{"a;b", false},
		{"a$b", false},
		{"a'b", false},
		{"작업", false},
		{"a\nb", false},
	}
	for _, tt := range tests {
		if got := ValidName(tt.in); got != tt.want {
			t.Errorf("ValidName(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestCheckLine(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"a plain line", "please also run the linters", true},
		{"quotes and shell characters", `use "go test" and $HOME; ` + "`x`", true},
		{"unicode", "작업을 계속하세요 ✳", true},
		{"a slash inside", "look at /tmp/x", true},
		{"leading space before a slash", " /help", true},
		{"999 characters", strings.Repeat("a", 999), true},
		{"a newline", "one\ntwo", false},
		{"a carriage return", "one\rtwo", false},
		{"a trailing newline", "one\n", false},
		{"a tab", "a\tb", false},
		{"C1 CSI (U+009B)", "a\u009b[2Jb", false},
		{"C1 NEL (U+0085)", "a\u0085b", false},
		{"a raw CSI byte", "a\x9b[2Jb", false},
		{"escape", "a\x1b[Ab", false},
		{"ctrl-c", "a\x03", false},
		{"delete", "a\x7f", false},
		{"NUL", "a\x00", false},
		{"a leading slash", "/clear", false},
		{"a leading dollar", "$skill", false},
		{"1000 characters", strings.Repeat("a", 1000), false},
		{"far too long", strings.Repeat("ab ", 1000), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckLine(tt.in)
			if tt.ok {
				if err != nil {
					t.Errorf("CheckLine: %v", err)
				}
				return
			}
			wantKind(t, err, api.KindUsage)
			var oe *api.Error
			errors.As(err, &oe)
			if oe.Hint == "" {
				t.Errorf("refusal %q has no hint", oe.Message)
			}
		})
	}
}

// TestCheckTaskFileAndFolder: a task file that gives the agent nothing to
// read (a device, a pipe, an empty file) and a --cwd that is a file are
// refused, each saying what it is, with what to do.
func TestCheckTaskFileAndFolder(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.md")
	os.WriteFile(empty, nil, 0o600)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "t.md")
	os.WriteFile(good, []byte("summary: ok\n"), 0o600)
	for path, want := range map[string]string{
		"/dev/null":                     "the task file /dev/null is not a file but a character device, which gives the agent no task to read",
		"/dev/zero":                     "the task file /dev/zero is not a file but a character device",
		fifo:                            "is not a file but a named pipe",
		empty:                           "the task file " + empty + " is empty, so the agent would have no task",
		dir:                             "cannot read the task file " + dir + ": it is a folder",
		filepath.Join(dir, "nosuch.md"): "no such file",
	} {
		err := checkTaskFile(path)
		var ae *api.Error
		if !errors.As(err, &ae) || !strings.Contains(ae.Message, want) || ae.Hint == "" {
			t.Errorf("checkTaskFile(%s) = %v; want %q and a Try line", path, err, want)
		}
	}
	if err := checkTaskFile(good); err != nil {
		t.Errorf("checkTaskFile(a task) = %v", err)
	}
	err := checkCwdFolder(good)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Message != "the worker's folder "+good+" is a file, not a folder" || ae.Hint != "pass its folder with --cwd "+dir {
		t.Errorf("checkCwdFolder(a file) = %v", err)
	}
	if err := checkCwdFolder(filepath.Join(dir, "nowhere")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("checkCwdFolder(nowhere) = %v", err)
	}
	if err := checkCwdFolder(dir); err != nil {
		t.Errorf("checkCwdFolder(a folder) = %v", err)
	}
}
