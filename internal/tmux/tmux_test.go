package tmux

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
)

// line builds a pane line the way tmux prints paneFormat.
func line(fields ...string) string { return strings.Join(fields, sep) }

// fullLine is a pane line with every field set; path is the last field.
func fullLine(id, path string) string {
	return line(id, "@4", "2", "$1", "4242", "0", "run-abc", "worker", "%1", "sim",
		"sess-1", "api", "main", "api window", "st", path)
}

func TestParsePane(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    Pane
		wantErr bool
	}{
		{
			name: "every field",
			line: fullLine("%7", "/home/u/proj"),
			want: Pane{
				ID: "%7", WindowID: "@4", WindowIndex: "2", SessionID: "$1", PID: 4242,
				StRun: "run-abc", StRole: "worker", StParent: "%1", StAgent: "sim", StAgentSession: "sess-1",
				StName: "api", SessionName: "main", WindowName: "api window", Command: "st", Path: "/home/u/proj",
			},
		},
		{
			name: "plain pane: st's options empty, pane dead",
			line: line("%0", "@0", "0", "$0", "1", "1", "", "", "", "", "", "", "s", "w", "bash", "/"),
			want: Pane{ID: "%0", WindowID: "@0", WindowIndex: "0", SessionID: "$0", PID: 1, Dead: true,
				SessionName: "s", WindowName: "w", Command: "bash", Path: "/"},
		},
		{
			name: "separator inside the path stays in the path",
			line: fullLine("%3", "/tmp/a"+sep+"b"+sep+"c d"),
			want: Pane{
				ID: "%3", WindowID: "@4", WindowIndex: "2", SessionID: "$1", PID: 4242,
				StRun: "run-abc", StRole: "worker", StParent: "%1", StAgent: "sim", StAgentSession: "sess-1",
				StName: "api", SessionName: "main", WindowName: "api window", Command: "st",
				Path: "/tmp/a" + sep + "b" + sep + "c d",
			},
		},
		{
			name: "unicode and spaces in free text",
			line: line("%12", "@1", "1", "$2", "99", "0", "", "", "", "", "", "", "프로젝트", "✳ claude", "node", "/home/u/작업 폴더"),
			want: Pane{ID: "%12", WindowID: "@1", WindowIndex: "1", SessionID: "$2", PID: 99,
				SessionName: "프로젝트", WindowName: "✳ claude", Command: "node", Path: "/home/u/작업 폴더"},
		},
		{
			name: "pid that is not a number reads as 0",
			line: line("%1", "@1", "1", "$1", "", "0", "", "", "", "", "", "", "s", "w", "sh", "/x"),
			want: Pane{ID: "%1", WindowID: "@1", WindowIndex: "1", SessionID: "$1",
				SessionName: "s", WindowName: "w", Command: "sh", Path: "/x"},
		},
		{name: "empty line", line: "", wantErr: true},
		{name: "one field short", line: line("%1", "@1", "1", "$1", "1", "0", "", "", "", "", "", "", "s", "w", "sh"), wantErr: true},
		{name: "only an id", line: "%1", wantErr: true},
		{name: "id without %", line: fullLine("7", "/x"), wantErr: true},
		{name: "empty id", line: fullLine("", "/x"), wantErr: true},
		{name: "other separator", line: strings.ReplaceAll(fullLine("%1", "/x"), sep, "\t"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePane(tt.line)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParsePane(%q) = %+v, want an error", tt.line, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePane(%q): %v", tt.line, err)
			}
			if got != tt.want {
				t.Errorf("ParsePane(%q)\n got %+v\nwant %+v", tt.line, got, tt.want)
			}
		})
	}
}

func TestPaneFormatMatchesParsePane(t *testing.T) {
	// ParsePane reads fields by position: the format must have exactly as
	// many, with the id first and the free-text path last.
	f := strings.Split(paneFormat, sep)
	if len(f) != 16 {
		t.Fatalf("paneFormat has %d fields, ParsePane reads 16", len(f))
	}
	if f[0] != "#{pane_id}" || f[15] != "#{pane_current_path}" {
		t.Errorf("paneFormat must start with the pane id and end with the path: %q", f)
	}
}

func TestParsePanes(t *testing.T) {
	out := fullLine("%1", "/a") + "\n\n" + fullLine("%2", "/b") + "\n"
	panes, err := parsePanes(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(panes) != 2 || panes[0].ID != "%1" || panes[1].ID != "%2" || panes[1].Path != "/b" {
		t.Errorf("parsePanes = %+v", panes)
	}
	if panes, err := parsePanes(""); err != nil || panes != nil {
		t.Errorf("parsePanes(\"\") = %v, %v; want nil, nil", panes, err)
	}
	if _, err := parsePanes(fullLine("%1", "/a") + "\ngarbage\n"); err == nil {
		t.Error("parsePanes with a bad line: no error")
	}
}

func TestSessions(t *testing.T) {
	p := func(id, sess, sessName, win, idx, winName string) Pane {
		return Pane{ID: id, SessionID: sess, SessionName: sessName, WindowID: win, WindowIndex: idx, WindowName: winName}
	}
	a1 := p("%1", "$1", "main", "@1", "0", "coord")
	a2 := p("%2", "$1", "main", "@2", "1", "api")
	b3 := p("%3", "$2", "other", "@3", "0", "sh")
	a4 := p("%4", "$1", "main", "@1", "0", "coord") // a split of @1, listed after $2
	// A window linked into two sessions has one id in both.
	b5 := p("%5", "$2", "other", "@2", "1", "api")

	tests := []struct {
		name  string
		panes []Pane
		want  []Session
	}{
		{name: "none", panes: nil, want: nil},
		{name: "one pane", panes: []Pane{a1}, want: []Session{{ID: "$1", Name: "main", Windows: []Window{{ID: "@1", Index: "0", Name: "coord", Panes: []Pane{a1}}}}}},
		{
			name:  "grouped in tmux's order",
			panes: []Pane{a1, a2, b3, a4, b5},
			want: []Session{
				{ID: "$1", Name: "main", Windows: []Window{
					{ID: "@1", Index: "0", Name: "coord", Panes: []Pane{a1, a4}},
					{ID: "@2", Index: "1", Name: "api", Panes: []Pane{a2}},
				}},
				{ID: "$2", Name: "other", Windows: []Window{
					{ID: "@3", Index: "0", Name: "sh", Panes: []Pane{b3}},
					{ID: "@2", Index: "1", Name: "api", Panes: []Pane{b5}},
				}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sessions(tt.panes); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Sessions\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"st", "st"},
		{"/usr/local/bin/st", "/usr/local/bin/st"},
		{"--name=api-1,b:c", "--name=api-1,b:c"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
		{"`id`", "'`id`'"},
		{"a;b", "'a;b'"},
		{"~", "'~'"},
		{"*.go", "'*.go'"},
		{"a\nb", "'a\nb'"},
		{"é", "'é'"},
		{"''", `''\'''\'''`},
	}
	for _, tt := range tests {
		if got := ShellQuote(tt.in); got != tt.want {
			t.Errorf("ShellQuote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	if got, want := ShellJoin([]string{"/bin/st", "agent", "sim", "a b"}), "/bin/st agent sim 'a b'"; got != want {
		t.Errorf("ShellJoin = %s, want %s", got, want)
	}
	if got := ShellJoin(nil); got != "" {
		t.Errorf("ShellJoin(nil) = %q, want empty", got)
	}
}

// trickyArgs are arguments that a shell would change if they were not quoted.
func trickyArgs(t *testing.T) []string {
	pwned := filepath.Join(t.TempDir(), "pwned")
	t.Cleanup(func() {
		if _, err := os.Stat(pwned); err == nil {
			t.Errorf("a quoted argument ran a command: %s exists", pwned)
		}
	})
	return []string{
		"plain", "", " ", "two words", "  lead and trail  ", "it's", `"double"`, `'single'`, "''", `\`, `a\'b`,
		"$HOME", "${HOME}", "$(touch " + pwned + ")", "`touch " + pwned + "`", "a;touch " + pwned, "a && b || c",
		"a|b", "a>b", "<a", "*", "?", "[a]", "~", "~root", "#comment", "!", "-n", "--", "-e", "a\nb", "\n", "tab\there",
		"é", "작업 폴더", "✳ claude ❯\u00a0", "\x01\x1f\x7f", "\xff\xfe",
	}
}

func runSh(t *testing.T, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "HOME=/expanded-home")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", script, err)
	}
	return string(out)
}

func TestShellQuoteRoundTrip(t *testing.T) {
	args := trickyArgs(t)
	for _, a := range args {
		if got := runSh(t, "printf '%s' "+ShellQuote(a)); got != a {
			t.Errorf("sh read ShellQuote(%q) = %s as %q", a, ShellQuote(a), got)
		}
	}
	// The whole argv: as many arguments as given, each intact.
	got := runSh(t, "printf '%s\\n' "+ShellJoin(args))
	if want := strings.Join(args, "\n") + "\n"; got != want {
		t.Errorf("sh read ShellJoin(args) as\n%q\nwant\n%q", got, want)
	}
	if got := runSh(t, "set -- "+ShellJoin(args)+"\necho $#"); strings.TrimSpace(got) != strconv.Itoa(len(args)) {
		t.Errorf("sh counted %s arguments in ShellJoin, want %d", strings.TrimSpace(got), len(args))
	}
}

func TestDefaultSocket(t *testing.T) {
	t.Setenv("TMUX_TMPDIR", "/x/y")
	if got, want := DefaultSocket(), filepath.Join("/x/y", "tmux-"+strconv.Itoa(os.Getuid()), "default"); got != want {
		t.Errorf("DefaultSocket() = %q, want %q", got, want)
	}
	t.Setenv("TMUX_TMPDIR", "")
	if got := DefaultSocket(); !strings.HasPrefix(got, "/tmp/tmux-") {
		t.Errorf("DefaultSocket() without TMUX_TMPDIR = %q, want it under /tmp", got)
	}
}

func TestValidPaneID(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"%0", true},
		{"%7", true},
		{"%12345", true},
		{"", false},
		{"%", false},
		{"7", false},
		{"@7", false},
		{"$7", false},
		{"%7x", false},
		{"% 7", false},
		{"%7 ", false},
		{"%%7", false},
		{"machine/%7", false},
		{"%99999999999999999999999", false},
	}
	for _, tt := range tests {
		if got := ValidPaneID(tt.in); got != tt.want {
			t.Errorf("ValidPaneID(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestValidPaneIDSigned(t *testing.T) {
	for _, s := range []string{"%-1", "%+1"} {
		if ValidPaneID(s) {
			t.Errorf("ValidPaneID(%q) = true", s)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		stderr string
		want   error
	}{
		// What tmux 3.3a prints, as measured.
		{"no server running on /tmp/tmux-0/default\n", ErrNoServer},
		{"error connecting to /tmp/st1/sock (No such file or directory)\n", ErrNoServer},
		{"error connecting to /tmp/st1/sock (Connection refused)\n", ErrNoServer},
		{"server exited unexpectedly\n", ErrNoServer},
		{"can't find pane: %99\n", ErrNoPane},
		{"no such pane: %99\n", ErrNoPane},
		{"can't find window: @9\n", ErrNoPane},
		{"can't find session: nosess\n", ErrNoPane},
		{"Can't Find Pane: %1", ErrNoPane},
		{"unknown command: frobnicate\n", nil},
		{"invalid option: nope\n", nil},
		{"", nil},
	}
	for _, tt := range tests {
		if got := classify(tt.stderr); got != tt.want {
			t.Errorf("classify(%q) = %v, want %v", tt.stderr, got, tt.want)
		}
	}
}

func TestErrorKeepsItsCause(t *testing.T) {
	e := &Error{Args: []string{"capture-pane", "-p", "-t", "%9"}, ExitCode: 1, Stderr: "can't find pane: %9\n", kind: classify("can't find pane: %9\n")}
	if got, want := e.Error(), "tmux capture-pane: can't find pane: %9"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	wrapped := error(e)
	if !errors.Is(wrapped, ErrNoPane) || errors.Is(wrapped, ErrNoServer) {
		t.Errorf("errors.Is: want ErrNoPane only for %v", e)
	}
	e2 := &Error{Args: []string{"kill-pane"}, ExitCode: 1}
	if got, want := e2.Error(), "tmux kill-pane: exit status 1"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if errors.Is(e2, ErrNoPane) || errors.Is(e2, ErrNoServer) {
		t.Errorf("an unclassified error matched a sentinel")
	}
	if got := (&Error{ExitCode: 2}).Error(); got != "tmux: exit status 2" {
		t.Errorf("Error() without args = %q", got)
	}
}

// call is one tmux command a fakeRunner expects, and its answer.
type call struct {
	args []string
	out  string
	err  error
}

// fakeRunner answers the expected commands in order and fails the test
// on any other command, and on an expected one that never ran.
type fakeRunner struct {
	t     *testing.T
	calls []call
	n     int
}

func newFake(t *testing.T, calls ...call) *Client {
	f := &fakeRunner{t: t, calls: calls}
	t.Cleanup(func() {
		if f.n < len(f.calls) {
			for _, c := range f.calls[f.n:] {
				t.Errorf("expected tmux command not run: %q", c.args)
			}
		}
	})
	return NewWithRunner("/tmp/fake.sock", f)
}

func (f *fakeRunner) Run(ctx context.Context, args ...string) (string, error) {
	if f.n >= len(f.calls) {
		f.t.Errorf("unexpected tmux command: %q", args)
		return "", errors.New("unexpected tmux command")
	}
	c := f.calls[f.n]
	f.n++
	if !slices.Equal(args, c.args) {
		f.t.Errorf("tmux command\n got %q\nwant %q", args, c.args)
		return "", errors.New("unexpected tmux command")
	}
	return c.out, c.err
}

func noPane(args ...string) error {
	return &Error{Args: args, ExitCode: 1, Stderr: "can't find pane: %9\n", kind: ErrNoPane}
}

func TestNewWindow(t *testing.T) {
	out := fullLine("%8", "/w") + "\n"
	env := map[string]string{"ST_HOME": "/h", "PATH": "/bin:/usr/bin", "A": "x y", "ST_BIN": "/bin/st"}
	sortedEnv := []string{"-e", "A=x y", "-e", "PATH=/bin:/usr/bin", "-e", "ST_BIN=/bin/st", "-e", "ST_HOME=/h"}
	cmd := []string{"/bin/st", "agent", "sim", "--note", "it's $HOME; `x`"}
	// Several arguments go to tmux as they are: it runs the program with
	// no shell between.
	quoted := cmd

	tests := []struct {
		name string
		opts NewWindowOpts
		want []string
	}{
		{
			name: "window in a session by id",
			opts: NewWindowOpts{Target: "$1", Name: "api", Cwd: "/w", Env: env, Command: cmd},
			want: slices.Concat([]string{"new-window", "-d", "-P", "-F", paneFormat, "-t", "$1:", "-n", "api", "-c", "/w"}, sortedEnv, quoted),
		},
		{
			name: "window at a given index keeps its target",
			opts: NewWindowOpts{Target: "main:4", Command: []string{"sh"}},
			want: []string{"new-window", "-d", "-P", "-F", paneFormat, "-t", "main:4", "sh"},
		},
		{
			name: "split beside a pane has no name",
			opts: NewWindowOpts{Target: "%3", Name: "api", Cwd: "/w", Env: env, Command: cmd, Split: true},
			want: slices.Concat([]string{"split-window", "-d", "-P", "-F", paneFormat, "-t", "%3", "-c", "/w"}, sortedEnv, quoted),
		},
		{
			name: "no command: the default shell",
			opts: NewWindowOpts{Target: "$2"},
			want: []string{"new-window", "-d", "-P", "-F", paneFormat, "-t", "$2:"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFake(t, call{args: tt.want, out: out})
			p, err := c.NewWindow(context.Background(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if p.ID != "%8" || p.Path != "/w" {
				t.Errorf("NewWindow returned %+v", p)
			}
		})
	}
}

func TestNewWindowError(t *testing.T) {
	args := []string{"new-window", "-d", "-P", "-F", paneFormat, "-t", "$9:"}
	c := newFake(t, call{args: args, err: noPane(args...)})
	_, err := c.NewWindow(context.Background(), NewWindowOpts{Target: "$9"})
	if !errors.Is(err, ErrNoPane) || !strings.Contains(err.Error(), "open a window in $9") {
		t.Errorf("NewWindow error = %v, want ErrNoPane with context", err)
	}
}

func TestCommands(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(c *Client) error
		want []string
	}{
		{
			name: "SendLiteral: text starting with - is literal",
			run:  func(c *Client) error { return c.SendLiteral(ctx, "%3", "-n it's $HOME; `x` \"y\"") },
			want: []string{"send-keys", "-t", "%3", "-l", "--", "-n it's $HOME; `x` \"y\""},
		},
		{
			name: "SendLiteral: a key name is typed, not pressed",
			run:  func(c *Client) error { return c.SendLiteral(ctx, "%3", "Enter") },
			want: []string{"send-keys", "-t", "%3", "-l", "--", "Enter"},
		},
		{
			name: "SendKeys",
			run:  func(c *Client) error { return c.SendKeys(ctx, "%3", "BSpace", "BSpace", "Enter") },
			want: []string{"send-keys", "-t", "%3", "BSpace", "BSpace", "Enter"},
		},
		{
			name: "SetOption",
			run:  func(c *Client) error { return c.SetOption(ctx, "%3", "@st_run", "run-abc") },
			want: []string{"set-option", "-p", "-t", "%3", "@st_run", "run-abc"},
		},
		{
			name: "SetOption with an empty value",
			run:  func(c *Client) error { return c.SetOption(ctx, "%3", "@st_name", "") },
			want: []string{"set-option", "-p", "-t", "%3", "@st_name", ""},
		},
		{
			name: "UnsetOption",
			run:  func(c *Client) error { return c.UnsetOption(ctx, "%3", "@st_parent") },
			want: []string{"set-option", "-p", "-u", "-t", "%3", "@st_parent"},
		},
		{
			name: "KillPane",
			run:  func(c *Client) error { return c.KillPane(ctx, "%3") },
			want: []string{"kill-pane", "-t", "%3"},
		},
		{
			name: "RenameWindow",
			run:  func(c *Client) error { return c.RenameWindow(ctx, "%3", "api-2") },
			want: []string{"rename-window", "-t", "%3", "api-2"},
		},
		{
			name: "CaptureEscapes",
			run:  func(c *Client) error { _, err := c.CaptureEscapes(ctx, "%3"); return err },
			want: []string{"capture-pane", "-p", "-e", "-t", "%3"},
		},
		{
			name: "Capture",
			run:  func(c *Client) error { _, err := c.Capture(ctx, "%3"); return err },
			want: []string{"capture-pane", "-p", "-t", "%3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(newFake(t, call{args: tt.want})); err != nil {
				t.Fatal(err)
			}
		})
		t.Run(tt.name+": error keeps its cause", func(t *testing.T) {
			err := tt.run(newFake(t, call{args: tt.want, err: noPane(tt.want...)}))
			if !errors.Is(err, ErrNoPane) || !strings.Contains(err.Error(), "%3") {
				t.Errorf("error = %v, want ErrNoPane naming the pane", err)
			}
		})
	}
}

func TestListPanes(t *testing.T) {
	ctx := context.Background()
	args := []string{"list-panes", "-a", "-F", paneFormat}
	t.Run("panes", func(t *testing.T) {
		c := newFake(t, call{args: args, out: fullLine("%1", "/a") + "\n" + fullLine("%2", "/b"+sep+"c") + "\n"})
		panes, err := c.ListPanes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(panes) != 2 || panes[0].ID != "%1" || panes[1].Path != "/b"+sep+"c" {
			t.Errorf("ListPanes = %+v", panes)
		}
	})
	t.Run("no server means no panes", func(t *testing.T) {
		c := newFake(t, call{args: args, err: &Error{Args: args, ExitCode: 1, kind: ErrNoServer}})
		if panes, err := c.ListPanes(ctx); err != nil || panes != nil {
			t.Errorf("ListPanes = %v, %v; want nil, nil", panes, err)
		}
	})
	t.Run("other errors are returned", func(t *testing.T) {
		c := newFake(t, call{args: args, err: &Error{Args: args, ExitCode: 1, Stderr: "boom"}})
		if _, err := c.ListPanes(ctx); err == nil {
			t.Error("no error")
		}
	})
	t.Run("a line in another format is an error", func(t *testing.T) {
		c := newFake(t, call{args: args, out: "%1 @1 0\n"})
		if _, err := c.ListPanes(ctx); err == nil {
			t.Error("no error")
		}
	})
}

func TestPane(t *testing.T) {
	ctx := context.Background()
	t.Run("by id", func(t *testing.T) {
		c := newFake(t, call{args: []string{"display-message", "-p", "-t", "%5", "-F", paneFormat}, out: fullLine("%5", "/p") + "\n"})
		p, err := c.Pane(ctx, "%5")
		if err != nil || p.ID != "%5" || p.Path != "/p" {
			t.Errorf("Pane = %+v, %v", p, err)
		}
	})
	for _, id := range []string{"", "5", "main:1", "-t", "%5;kill-server"} {
		t.Run("not an id "+id, func(t *testing.T) {
			c := newFake(t) // runs nothing
			if _, err := c.Pane(ctx, id); !errors.Is(err, ErrNoPane) {
				t.Errorf("Pane(%q) error = %v, want ErrNoPane", id, err)
			}
		})
	}
}

// TestRealTmux checks the parts that depend on what tmux 3.3a really
// prints, against a private server that only this test uses.
func TestRealTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a tmux server")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed: scripts/test installs it")
	}
	dir := testutil.ShortTempDir(t)
	c := New(filepath.Join(dir, "sock"))
	ctx := context.Background()
	t.Cleanup(func() { c.Run(context.Background(), "kill-server") })

	if panes, err := c.ListPanes(ctx); err != nil || panes != nil {
		t.Fatalf("ListPanes with no server = %v, %v; want nil, nil", panes, err)
	}
	if _, err := c.Run(ctx, "list-panes", "-a"); !errors.Is(err, ErrNoServer) {
		t.Errorf("list-panes with no server: %v, want ErrNoServer", err)
	}

	// A folder whose name holds the separator and a space: the path is
	// the last field, so it comes back whole.
	odd := filepath.Join(dir, "a"+sep+"b c")
	if err := os.Mkdir(odd, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(ctx, "new-session", "-d", "-s", "t", "-c", odd, "sleep 60"); err != nil {
		t.Fatal(err)
	}
	// tmux reads a pane's path from its process, which a loaded machine
	// may not have started yet: the path is empty until then (CI at a
	// load of 13), so look again until it is there or a deadline passes.
	var panes []Pane
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; {
		panes, err = c.ListPanes(ctx)
		if err != nil || len(panes) != 1 {
			t.Fatalf("ListPanes = %+v, %v", panes, err)
		}
		if panes[0].Path != "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	p0 := panes[0]
	if !ValidPaneID(p0.ID) || p0.Path != odd || p0.SessionName != "t" || p0.PID == 0 {
		t.Errorf("pane = %+v, want path %q", p0, odd)
	}

	// The command of a new window reaches its program intact.
	out := filepath.Join(dir, "out")
	arg := "it's $HOME; `x` \"y\" -n"
	wp, err := c.NewWindow(ctx, NewWindowOpts{
		Target: p0.SessionID, Name: "w", Cwd: dir, Env: map[string]string{"ST_X": "a b"},
		Command: []string{"sh", "-c", `printf '%s|%s' "$1" "$ST_X" > "$2"; sleep 60`, "sh", arg, out},
	})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, func() (bool, string) {
		b, err := os.ReadFile(out)
		return err == nil && string(b) == arg+"|a b", "window wrote " + string(b)
	})
	if err := c.SetOption(ctx, wp.ID, "@st_run", "run-x"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Pane(ctx, wp.ID); err != nil || got.StRun != "run-x" || got.WindowName != "w" {
		t.Errorf("Pane(%s) = %+v, %v", wp.ID, got, err)
	}

	// A pane that does not exist.
	for name, f := range map[string]func() error{
		"capture-pane":  func() error { _, err := c.Capture(ctx, "%999"); return err },
		"send-keys":     func() error { return c.SendLiteral(ctx, "%999", "x") },
		"set-option":    func() error { return c.SetOption(ctx, "%999", "@st_run", "x") },
		"unset-option":  func() error { return c.UnsetOption(ctx, "%999", "@st_run") },
		"kill-pane":     func() error { return c.KillPane(ctx, "%999") },
		"rename-window": func() error { return c.RenameWindow(ctx, "%999", "x") },
		"new-window":    func() error { _, err := c.NewWindow(ctx, NewWindowOpts{Target: "nosuch"}); return err },
	} {
		if err := f(); !errors.Is(err, ErrNoPane) {
			t.Errorf("%s on a missing pane: %v, want ErrNoPane", name, err)
		}
	}
}

func TestRealTmuxPaneMissing(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed: scripts/test installs it")
	}
	c := New(filepath.Join(testutil.ShortTempDir(t), "sock"))
	ctx := context.Background()
	t.Cleanup(func() { c.Run(context.Background(), "kill-server") })
	if _, err := c.Run(ctx, "new-session", "-d", "sleep 60"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pane(ctx, "%999"); !errors.Is(err, ErrNoPane) {
		t.Errorf("Pane(%%999) error = %v, want ErrNoPane", err)
	}
}

func FuzzParsePane(f *testing.F) {
	f.Add(fullLine("%1", "/x"))
	f.Fuzz(func(t *testing.T, line string) {
		var p Pane
		var err error
		within(t, "ParsePane", func() { p, err = ParsePane(line) })
		if err != nil {
			return
		}
		if !strings.HasPrefix(p.ID, "%") {
			t.Fatalf("ParsePane(%q) gave id %q", line, p.ID)
		}
		// Fields are taken in order and the path keeps the rest.
		if !strings.HasPrefix(line, p.ID+sep) || !strings.HasSuffix(line, sep+p.Path) {
			t.Fatalf("ParsePane(%q) = %+v: id or path not where the line has them", line, p)
		}
		if strings.Contains(p.Command, sep) || strings.Contains(p.SessionName, sep) {
			t.Fatalf("ParsePane(%q) = %+v: a field before the path holds the separator", line, p)
		}
	})
}
