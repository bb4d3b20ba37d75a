package orch

import (
	"errors"
	"strings"
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
		if !strings.Contains(l, tt.task) || !strings.Contains(l, tt.stBin+" worker done --summary") {
			t.Errorf("TaskLine does not name the task %s and %s worker done: %q", tt.task, tt.stBin, l)
		}
		if err := CheckLine(l); err != nil {
			t.Errorf("CheckLine(TaskLine) = %v", err)
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
