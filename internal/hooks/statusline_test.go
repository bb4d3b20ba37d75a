package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/tidwall/gjson"
)

// userStatusLine is a settings.json with the user's own status line (a
// command with quotes of both kinds and a padding), in tabs.
const userStatusLine = "{\n\t\"model\": \"opus\",\n\t\"statusLine\": {\n\t\t\"type\": \"command\",\n\t\t\"command\": \"printf '%s' \\\"$(jq -r .model.id)\\\" it's\",\n\t\t\"padding\": 2\n\t},\n\t\"env\": {\"A\": \"1\"}\n}\n"

// st setup's status line runs st statusline with the user's own command
// after --then, every other key of statusLine as it was; installing again
// changes nothing; the undo (status line, then hooks) puts settings.json
// back byte for byte, with or without a status line of the user's, and
// removes st's backup.
func TestStatusLineInstallAndUndo(t *testing.T) {
	for _, c := range []struct{ name, orig, user string }{
		{"the user's own", userStatusLine, `printf '%s' "$(jq -r .model.id)" it's`},
		{"none", userSettings, ""},
		{"no file", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, "")
			e.opts.Agents = []string{Claude}
			settings := e.claude + "/settings.json"
			if c.orig != "" {
				e.write(t, ".claude/settings.json", c.orig, 0o640)
			}
			if _, err := Install(context.Background(), e.opts); err != nil {
				t.Fatal(err)
			}
			sl := InstallStatusLine(e.opts)
			doc := read(t, settings)
			if sl.Error != "" || !sl.Changed || !sl.Current || sl.User != c.user {
				t.Fatalf("install: %+v", sl)
			}
			cmd := gjson.Get(doc, "statusLine.command").String()
			if want := StatusLineCommand(testST, c.user); cmd != want {
				t.Fatalf("statusLine.command = %q, want %q", cmd, want)
			}
			if path, user, ok := ParseStatusLineCommand(cmd, testST); !ok || path != testST || user != c.user {
				t.Fatalf("read back: %q %q %v", path, user, ok)
			}
			if c.user != "" && gjson.Get(doc, "statusLine.padding").Int() != 2 {
				t.Fatalf("the padding went: %s", doc)
			}
			if again := InstallStatusLine(e.opts); again.Changed || again.Error != "" || read(t, settings) != doc {
				t.Fatalf("a second install changed something: %+v", again)
			}
			if st := StatusLineStatus(e.opts); !st.Current || st.User != c.user {
				t.Fatalf("status: %+v", st)
			}
			un := UninstallStatusLine(e.opts)
			if un.Error != "" || !un.Changed || un.Installed || un.User != c.user {
				t.Fatalf("uninstall: %+v", un)
			}
			if _, err := Uninstall(context.Background(), e.opts); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(settings)
			switch {
			case c.orig == "" && !errors.Is(err, os.ErrNotExist):
				t.Fatalf("settings.json that was not there is %q (%v)", got, err)
			case c.orig != "" && string(got) != c.orig:
				t.Fatalf("settings.json after the undo:\n%s\nwant, byte for byte:\n%s", got, c.orig)
			}
			for _, p := range []string{settings + BackupSuffix, settings + AbsentSuffix} {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s is still there: %v", p, err)
				}
			}
		})
	}
}

// A statusLine st cannot read as Claude's is left as it was, with what to
// do; another st's status line is taken over with the user's command.
func TestStatusLineOddFiles(t *testing.T) {
	e := newEnv(t, "")
	for _, doc := range []string{`{"statusLine": "echo hi"}`, `{"statusLine": {"command": 7}}`, `[1]`} {
		p := e.write(t, ".claude/settings.json", doc, 0o600)
		if sl := InstallStatusLine(e.opts); sl.Error == "" || sl.Hint == "" || read(t, p) != doc {
			t.Errorf("%s: %+v, file now %s", doc, sl, read(t, p))
		}
	}
	old, _ := json.Marshal(StatusLineCommand("/old/st", "echo 'hi'"))
	p := e.write(t, ".claude/settings.json", `{"statusLine": {"type": "command", "command": `+string(old)+`}}`, 0o600)
	sl := InstallStatusLine(e.opts)
	if sl.Error != "" || !sl.Changed || sl.User != "echo 'hi'" {
		t.Fatalf("over another st's: %+v", sl)
	}
	if got := gjson.Get(read(t, p), "statusLine.command").String(); got != StatusLineCommand(testST, "echo 'hi'") {
		t.Fatalf("command = %q", got)
	}
}

// What StatusLineCommand writes reads back as the same user command,
// whatever it holds.
func FuzzStatusLineCommand(f *testing.F) {
	for _, s := range []string{"", "echo hi", `printf '%s' "$x"`, "a'b''c", "--then x", "'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, user string) {
		_, got, ok := ParseStatusLineCommand(StatusLineCommand("/opt/my st/st", user), "/opt/my st/st")
		if !ok || got != user {
			t.Fatalf("%q read back as %q (%v)", user, got, ok)
		}
	})
}
