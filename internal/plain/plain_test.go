package plain

import (
	"testing"
	"unicode/utf8"
)

func TestTextAndLine(t *testing.T) {
	for _, c := range []struct {
		name       string
		s          string
		text, line bool // passes Text, passes Line
	}{
		{"plain", "fix the tests, then report", true, true},
		{"unicode", "résumé ✓ 日本", true, true},
		{"tab", "a\tb", true, false},
		{"newline", "a\nb", true, false},
		{"carriage return", "a\rb", false, false},
		{"escape", "a\x1b[2Jb", false, false},
		{"bell", "a\x07", false, false},
		{"DEL", "a\x7f", false, false},
		{"C1 CSI as UTF-8", "a\u009b31mb", false, false},
		{"C1 NEL", "a\u0085b", false, false},
		{"C1 last", "a\u009fb", false, false},
		{"NBSP is fine", "a\u00a0b", true, true},
		{"raw CSI byte", "a\x9b31mb", false, false},
		{"bad UTF-8", "a\xffb", false, false},
		{"a real U+FFFD", "a\uFFFDb", true, true},
		{"NUL", "a\x00b", false, false},
	} {
		if got := Text(c.s) == nil; got != c.text {
			t.Errorf("%s: Text(%q) passes=%v, want %v (%v)", c.name, c.s, got, c.text, Text(c.s))
		}
		if got := Line(c.s) == nil; got != c.line {
			t.Errorf("%s: Line(%q) passes=%v, want %v (%v)", c.name, c.s, got, c.line, Line(c.s))
		}
	}
}

// TestCleanShowsHiddenCharacters: a bidi control (U+202E shows a text's
// end first), a zero-width space or another format character is made
// visible when shown; the joiners that emoji need stay.
func TestCleanShowsHiddenCharacters(t *testing.T) {
	for in, want := range map[string]string{
		"done \u202egnp.exe":     "done \uFFFDgnp.exe",
		"a\u2066b\u2069c\u200fd": "a\uFFFDb\uFFFDc\uFFFDd",
		"zero\u200bwidth\ufeff":  "zero\uFFFDwidth\uFFFD",
		"tag\U000E0041":          "tag\uFFFD",
		"👩\u200d💻 ok":            "👩\u200d💻 ok",
		"résumé ✓ 日本":            "résumé ✓ 日本",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%+q) = %+q, want %+q", in, got, want)
		}
	}
}

func TestErrorSaysWhat(t *testing.T) {
	if err := Line("ab\u009bc"); err == nil || err.Error() != "it has a control character (U+009B) (at byte 2)" {
		t.Fatalf("got %v", err)
	}
	if err := Line("a\nb"); err == nil || err.Error() != "it has a line break (at byte 1)" {
		t.Fatalf("got %v", err)
	}
	if err := Text("a\xc3"); err == nil || err.Error() != "it has bytes that are not UTF-8 (at byte 1)" {
		t.Fatalf("got %v", err)
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"fine\n\tline":        "fine\n\tline",
		"x\x1b]52;c;aGk=\x07": "x\uFFFD]52;c;aGk=\uFFFD",
		"\u009b2J":            "\uFFFD2J",
		"a\x9bb\xff":          "a\uFFFDb\uFFFD",
	} {
		got := Clean(in)
		if got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
		if Text(got) != nil || !utf8.ValidString(got) {
			t.Errorf("Clean(%q) = %q still fails the check", in, got)
		}
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "a\x1b[0m", "\u009b", "\xff\xfe", "ok"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := Clean(s)
		if err := Text(c); err != nil {
			t.Fatalf("Clean(%q) = %q: %v", s, c, err)
		}
		if Text(s) == nil && c != s {
			t.Fatalf("Clean changed a clean text %q to %q", s, c)
		}
	})
}
