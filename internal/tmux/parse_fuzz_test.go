package tmux

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
)

// Fuzz targets for what st reads back from tmux: the -F format lines of
// list-panes, display-message and list-windows, which carry names, paths
// and pane options that anyone may set (a window named `$(x)`, a path
// with the separator in it). Seeds live in testdata/fuzz/<FuzzName>/.

// fuzzDeadline bounds one input.
const fuzzDeadline = 2 * time.Second

func within(t *testing.T, what string, fn func()) {
	t.Helper()
	testutil.Within(t, fuzzDeadline, what, fn)
}

// outputRunner answers every command with the same output.
type outputRunner struct{ out string }

func (r outputRunner) Run(ctx context.Context, args ...string) (string, error) { return r.out, nil }

// layoutLine builds a line the way tmux prints layoutFormat.
func layoutLine(session, window, active, pane, id, layout, name, path string, opts ...string) string {
	f := []string{session, window, active, pane, id, layout}
	for i := 0; i < 6; i++ {
		v := ""
		if i < len(opts) {
			v = opts[i]
		}
		f = append(f, v)
	}
	return strings.Join(append(append([]string{layoutTag}, f...), "123:1700000000", name, "456", path), sep)
}

// TestLayoutRefusesAnotherFormat: a line of another command's answer with
// as many fields (list-panes' pane format, which a control client cut off
// as its server died once handed back for the layout's) is refused, not
// read as sessions named after panes; a line of the layout's own is read.
func TestLayoutRefusesAnotherFormat(t *testing.T) {
	pane := strings.Join([]string{"%8", "@1", "0", "$0", "4242", "0", "", "", "", "", "", "", "main", "w", "sh", "/tmp", "x"}, sep)
	if l, err := parseLayout(pane); err == nil {
		t.Errorf("a pane-format line was read as a layout: %+v", l)
	}
	l, err := parseLayout(layoutLine("main", "0", "1", "0", "%8", "tiled", "w", "/tmp"))
	if err != nil || len(l.Sessions) != 1 || l.Sessions[0].Name != "main" || l.Sessions[0].Windows[0].Panes[0].ID != "%8" ||
		l.Sessions[0].Windows[0].Panes[0].PID != 456 || l.Server != "123:1700000000" {
		t.Errorf("the layout's own line: %+v %v", l, err)
	}
}

func FuzzParseLayout(f *testing.F) {
	f.Add(layoutLine("main", "0", "1", "0", "%0", "b25d,200x50,0,0,0", "coord", "/w") + "\n" +
		layoutLine("main", "1", "0", "0", "%3", "b25d,200x50,0,0,3", "w1", "/w", "run-1", "worker", "%0", "sim", "s-1", "w1") + "\n")
	f.Add(layoutLine("$(touch x)", "0", "1", "0", "%1", "l", "`id`;#{pane_id}", "/a\x1fb") + "\n")
	f.Add(layoutLine("st-web-1", "0", "1", "0", "%1", "l", "x", "/") + "\n")
	f.Add(layoutLine("s", "-1", "1", "99999999999999999999", "%1", "", "", "") + "\n\n\n")
	f.Add("short" + sep + "line\n")
	f.Fuzz(func(t *testing.T, out string) {
		var l Layout
		var err error
		within(t, "parseLayout", func() { l, err = parseLayout(out) })
		if err != nil {
			if !strings.HasPrefix(err.Error(), "unexpected layout line") {
				t.Fatalf("error %q does not say what was wrong", err)
			}
			return
		}
		// Every line that is not a web terminal's view is one pane, once.
		want := 0
		for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if f := strings.SplitN(line, sep, 3); line != "" && !IsWebSession(f[1]) { // f[0] is the tag
				want++
			}
		}
		got := 0
		names := map[string]bool{}
		for _, s := range l.Sessions {
			if names[s.Name] {
				t.Fatalf("session %q listed twice", s.Name)
			}
			names[s.Name] = true
			if IsWebSession(s.Name) {
				t.Fatalf("web session %q kept", s.Name)
			}
			if !sort.SliceIsSorted(s.Windows, func(a, b int) bool { return s.Windows[a].Index < s.Windows[b].Index }) {
				t.Fatalf("windows of %q out of order", s.Name)
			}
			for i, w := range s.Windows {
				if i > 0 && s.Windows[i-1].Index == w.Index {
					t.Fatalf("window %d of %q listed twice", w.Index, s.Name)
				}
				got += len(w.Panes)
				for _, p := range w.Panes {
					for k, v := range p.Options {
						if v == "" || !strings.HasPrefix(k, "@st_") {
							t.Fatalf("pane option %q=%q", k, v)
						}
					}
				}
			}
		}
		if got != want {
			t.Fatalf("%d panes from %d lines", got, want)
		}
	})
}

// FuzzTmuxOutput feeds one output to every reader of tmux output, as if
// tmux had printed it: none may panic or hang, and what they return must
// hold together.
func FuzzTmuxOutput(f *testing.F) {
	f.Add(fullLine("%1", "/w") + "\n" + fullLine("%2", "/w/$(touch x) `id`;#{pane_id}") + "\n")
	f.Add(line("%1", "@1", "0", "$1", "1", "0", "", "", "", "", "", "", "st-web-abc", "w", "sh", "/") + "\n")
	f.Add("$1" + sep + "@2" + sep + "1\n$2" + sep + "@3" + sep + "0\n")
	f.Add("200x50\n")
	f.Add("-1x99999999999999999999\n")
	f.Add(strings.Repeat(sep, 15) + "\n")
	f.Add("%" + strings.Repeat(sep, 15) + "\n")
	f.Fuzz(func(t *testing.T, out string) {
		c := NewWithRunner("/tmp/fuzz.sock", outputRunner{out})
		ctx := context.Background()
		within(t, "ListPanes", func() {
			panes, err := c.ListPanes(ctx)
			if err != nil {
				return
			}
			n := 0
			for _, s := range Sessions(panes) {
				for _, w := range s.Windows {
					for _, p := range w.Panes {
						n++
						if p.SessionID != s.ID || p.WindowID != w.ID {
							t.Fatalf("pane %s grouped under %s %s", p.ID, s.ID, w.ID)
						}
					}
				}
			}
			if n != len(panes) {
				t.Fatalf("Sessions kept %d of %d panes", n, len(panes))
			}
			for _, p := range panes {
				if !strings.HasPrefix(p.ID, "%") || IsWebSession(p.SessionName) {
					t.Fatalf("listed pane %+v", p)
				}
			}
		})
		within(t, "Pane", func() {
			p, err := c.Pane(ctx, "%1")
			if err == nil && !strings.HasPrefix(p.ID, "%") {
				t.Fatalf("Pane read %+v", p)
			}
			if err != nil && strings.Trim(strings.TrimRight(out, "\n"), sep) == "" && !errors.Is(err, ErrNoPane) {
				t.Fatalf("empty fields: %v, want ErrNoPane", err)
			}
		})
		within(t, "ReadLayout", func() { c.ReadLayout(ctx) })
		within(t, "ActiveWindows", func() {
			m, err := c.ActiveWindows(ctx)
			if err != nil {
				t.Fatalf("ActiveWindows: %v", err)
			}
			for s, w := range m {
				if strings.Contains(s, sep) || strings.Contains(w, sep) {
					t.Fatalf("ActiveWindows %q -> %q holds the separator", s, w)
				}
			}
		})
		within(t, "WindowSizeOf", func() {
			if _, err := c.WindowSizeOf(ctx, "@1"); err != nil && !errors.Is(err, ErrNoPane) {
				t.Fatalf("WindowSizeOf: %v", err)
			}
		})
		within(t, "classify", func() { classify(out) })
	})
}

// unquoteSh reads one word the way sh does, for words made of plain
// characters, single-quoted strings and backslash-escaped characters (all
// that ShellQuote makes). ok is false for anything else.
func unquoteSh(w string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		switch c := w[i]; c {
		case '\'':
			j := strings.IndexByte(w[i+1:], '\'')
			if j < 0 {
				return "", false
			}
			b.WriteString(w[i+1 : i+1+j])
			i += j + 1
		case '\\':
			if i+1 >= len(w) {
				return "", false
			}
			b.WriteByte(w[i+1])
			i++
		case ' ', '\t', '\n', '$', '`', '"', ';', '&', '|', '<', '>', '(', ')', '*', '?', '[', '#', '~', '!', '{', '}':
			return "", false // a character sh would act on, outside quotes
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// FuzzShellQuote: whatever a name, path or task holds, the word that
// ShellQuote makes reads back as itself, with nothing left for the shell
// to expand or run (the command tmux runs for a new window is built with it).
func FuzzShellQuote(f *testing.F) {
	for _, s := range []string{"", "st", "it's", "$(touch /tmp/x)", "`id`", "a;b && c | d", "#{pane_id}", "\x1b[31m", "''", "a\nb", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := ShellQuote(s)
		got, ok := unquoteSh(q)
		if !ok || got != s {
			t.Fatalf("ShellQuote(%q) = %s reads back as %q (ok=%v)", s, q, got, ok)
		}
		if j := ShellJoin([]string{s, s}); j != q+" "+q {
			t.Fatalf("ShellJoin = %s", j)
		}
	})
}
