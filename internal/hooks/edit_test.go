package hooks

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

const testST = "/opt/st/bin/st"

func TestCommand(t *testing.T) {
	for _, tc := range []struct{ st, want string }{
		{"/usr/local/bin/st", "/usr/local/bin/st hook claude Stop"},
		{"/home/a b/st", `'/home/a b/st' hook claude Stop`},
		{"/home/it's/st", `'/home/it'\''s/st' hook claude Stop`},
	} {
		got := Command(tc.st, Claude, "Stop")
		if got != tc.want {
			t.Errorf("Command(%q) = %q, want %q", tc.st, got, tc.want)
		}
		path, ev, ok := parseCommand(got, Claude, tc.st)
		if !ok || path != tc.st || ev != "Stop" {
			t.Errorf("parseCommand(%q) = %q, %q, %v", got, path, ev, ok)
		}
	}
}

func TestParseCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd   string
		agent string
		ok    bool
		path  string
	}{
		{"/old/place/st hook claude Stop", Claude, true, "/old/place/st"},
		{"st hook claude Stop", Claude, true, "st"},
		{`"/x y/st" hook claude Stop`, Claude, true, "/x y/st"},
		{"/opt/st/bin/st hook codex Stop", Claude, false, ""},          // another agent's
		{"/usr/bin/stx hook claude Stop", Claude, false, ""},           // not st
		{"/usr/bin/st hook claude", Claude, false, ""},                 // no event
		{"echo /usr/bin/st hook claude Stop", Claude, false, ""},       // runs echo
		{"/tmp/go-build1/st.test hook claude Stop", Claude, false, ""}, // another program
		{testST + " hook claude Stop", Claude, true, testST},
	} {
		path, _, ok := parseCommand(tc.cmd, tc.agent, testST)
		if ok != tc.ok || path != tc.path {
			t.Errorf("parseCommand(%q) = %q, %v; want %q, %v", tc.cmd, path, ok, tc.path, tc.ok)
		}
	}
	// The running st is recognised whatever its name.
	if _, _, ok := parseCommand("/tmp/b/cli.test hook claude Stop", Claude, "/tmp/b/cli.test"); !ok {
		t.Error("the st in use is not recognised by its path")
	}
}

// userSettings has the user's own keys and hooks, in an odd layout: tabs,
// a one-line list, a matcher group, an st hook of an older st.
const userSettings = "{\n\t\"model\": \"opus\",\n\t\"hooks\": {\n\t\t\"Stop\": [\n\t\t\t{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}\n\t\t],\n" +
	"\t\t\"PreToolUse\": [ { \"matcher\": \"Bash\", \"hooks\": [ { \"type\": \"command\", \"command\": \"/usr/local/bin/guard\", \"timeout\": 5 } ] } ],\n" +
	"\t\t\"PreCompact\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"backup-notes\"}]}]\n" +
	"\t},\n\t\"permissions\": {\"allow\": [\"Bash(ls:*)\"], \"deny\": []},\n\t\"env\": {\"A\": \"1\"}\n}\n"

func TestEditDocInstall(t *testing.T) {
	sp := specs[Claude]
	ed, err := editDoc(userSettings, sp, testST, true)
	if err != nil {
		t.Fatal(err)
	}
	if !ed.changed {
		t.Fatal("install changed nothing")
	}
	out := ed.out
	// Keys keep their order; the user's hooks come first, st's after.
	var keys []string
	gjson.Parse(out).ForEach(func(k, _ gjson.Result) bool { keys = append(keys, k.String()); return true })
	if strings.Join(keys, ",") != "model,hooks,permissions,env" {
		t.Errorf("top-level keys = %v", keys)
	}
	if got := gjson.Get(out, "hooks.Stop.0.hooks.0.command").String(); got != "say done" {
		t.Errorf("user's Stop hook moved: %q", got)
	}
	if got := gjson.Get(out, "hooks.Stop.1.hooks.0.command").String(); got != testST+" hook claude Stop" {
		t.Errorf("st's Stop hook = %q", got)
	}
	if got := gjson.Get(out, "hooks.PreToolUse.1.matcher").String(); got != "*" {
		t.Errorf("st's PreToolUse matcher = %q", got)
	}
	if got := gjson.Get(out, "hooks.PreToolUse.0.hooks.0.timeout").Int(); got != 5 {
		t.Errorf("user's PreToolUse timeout = %d", got)
	}
	if got := gjson.Get(out, "hooks.PreCompact.0.hooks.0.command").String(); got != "backup-notes" {
		t.Errorf("user's PreCompact hook = %q", got)
	}
	for _, ev := range ClaudeEvents {
		n := 0
		for _, g := range readGroups(out, sp, testST, ev) {
			for _, h := range g.handlers {
				if h.st {
					n++
				}
			}
		}
		if n != 1 {
			t.Errorf("%s has %d st hooks", ev, n)
		}
	}
	// The user's text is still there as it was.
	for _, part := range []string{
		"\t\t\t{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]},\n",
		"\t\t\"PreToolUse\": [ { \"matcher\": \"Bash\", \"hooks\": [ { \"type\": \"command\", \"command\": \"/usr/local/bin/guard\", \"timeout\": 5 } ] }, ",
		"\t},\n\t\"permissions\": {\"allow\": [\"Bash(ls:*)\"], \"deny\": []},\n\t\"env\": {\"A\": \"1\"}\n}\n",
	} {
		if !strings.Contains(out, part) {
			t.Errorf("%q is gone:\n%s", part, out)
		}
	}
	// New members follow the file's tab indentation.
	if !strings.Contains(out, "\n\t\t\"SessionStart\": [\n\t\t\t{\n") {
		t.Errorf("new event not laid out like its neighbours:\n%s", out)
	}
	// Once more: nothing to do.
	again, err := editDoc(out, sp, testST, true)
	if err != nil || again.changed || again.out != out {
		t.Errorf("second install changed the file (err %v)", err)
	}
	// Uninstall gives back the original, byte for byte.
	un, err := editDoc(out, sp, testST, false)
	if err != nil {
		t.Fatal(err)
	}
	if un.out != userSettings {
		t.Errorf("uninstall did not restore the file:\n%s\nwant:\n%s", un.out, userSettings)
	}
}

func TestEditDocReplacesOlderST(t *testing.T) {
	sp := specs[Claude]
	doc := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"/old/st hook claude Stop"}]},{"hooks":[{"type":"command","command":"say done"}]},` +
		`{"hooks":[{"type":"command","command":"/older/st hook claude Stop"}]}],` +
		`"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"guard"},{"type":"command","command":"/old/st hook claude PreToolUse"}]}]}}`
	ed, err := editDoc(doc, sp, testST, true)
	if err != nil {
		t.Fatal(err)
	}
	stop := gjson.Get(ed.out, "hooks.Stop")
	if n := len(stop.Array()); n != 2 {
		t.Fatalf("Stop has %d groups, want 2: %s", n, stop.Raw)
	}
	// Updated in place (the first st group), the duplicate gone.
	if got := gjson.Get(ed.out, "hooks.Stop.0.hooks.0.command").String(); got != testST+" hook claude Stop" {
		t.Errorf("Stop[0] = %q", got)
	}
	if got := gjson.Get(ed.out, "hooks.Stop.1.hooks.0.command").String(); got != "say done" {
		t.Errorf("Stop[1] = %q", got)
	}
	// st's handler inside the user's matcher group leaves it; st's own group is added.
	if got := gjson.Get(ed.out, "hooks.PreToolUse.0.hooks.#").Int(); got != 1 {
		t.Errorf("user's PreToolUse group has %d handlers, want 1", got)
	}
	if got := gjson.Get(ed.out, "hooks.PreToolUse.1.matcher").String(); got != "*" {
		t.Errorf("st's PreToolUse group matcher %q", got)
	}
	var stopPlan eventPlan
	for _, p := range ed.events {
		if p.Event == "Stop" {
			stopPlan = p
		}
	}
	if stopPlan.At == nil || *stopPlan.At != (pos{0, 0}) || len(stopPlan.Removed) != 1 || stopPlan.Removed[0] != (pos{2, 0}) {
		t.Errorf("Stop plan = %+v", stopPlan)
	}
}

func TestEditDocMoves(t *testing.T) {
	// st's group first, the user's after it: uninstall moves the user's
	// hook from group 1 to group 0, which Codex's trust key follows.
	doc := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"/x/st hook codex Stop"}]},{"hooks":[{"type":"command","command":"mine"}]}]}}`
	ed, err := editDoc(doc, specs[Codex], testST, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ed.events {
		if p.Event == "Stop" {
			if p.Moved[pos{1, 0}] != (pos{0, 0}) || len(p.Removed) != 1 {
				t.Errorf("plan = %+v", p)
			}
		}
	}
	if ed.out != `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"mine"}]}]}}` {
		t.Errorf("out = %s", ed.out)
	}
}

func TestEditDocEmptyAndCompact(t *testing.T) {
	sp := specs[Codex]
	for _, doc := range []string{"", "{}", `{"a":1}`, "{\n  \"hooks\": {}\n}\n", `{"hooks":{"Stop":[]}}`} {
		ed, err := editDoc(doc, sp, testST, true)
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		var v any
		if err := json.Unmarshal([]byte(ed.out), &v); err != nil {
			t.Fatalf("%q gave invalid JSON: %v\n%s", doc, err, ed.out)
		}
		un, err := editDoc(ed.out, sp, testST, false)
		if err != nil {
			t.Fatal(err)
		}
		if doc != "" && doc != "{\n  \"hooks\": {}\n}\n" && doc != `{"hooks":{"Stop":[]}}` && un.out != doc {
			t.Errorf("%q: install+uninstall gave %q", doc, un.out)
		}
	}
}

func TestCheckDoc(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"a":1,}`, "invalid JSON at line 1"},
		{"{\n  \"a\": 1\n  \"b\": 2\n}", "invalid JSON at line 3, column 3"},
		{`[]`, "the top level is a list"},
		{`{"hooks": []}`, `"hooks" is a list, not an object`},
		{`{"hooks": {"Stop": {}}}`, `"hooks.Stop" is an object, not a list`},
		{`{"hooks": {"Stop": [1]}}`, `"hooks.Stop[0]" is a number`},
		{`{"hooks": {"Stop": [{"hooks": "x"}]}}`, `"hooks.Stop[0].hooks" is a string`},
		{`{"hooks": {"Stop": [{"hooks": [null]}]}}`, `"hooks.Stop[0].hooks[0]" is null`},
		{`{"a":1} {"b":2}`, "invalid JSON"},
	} {
		err := checkDoc(tc.doc, specs[Claude])
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkDoc(%q) = %v, want %q", tc.doc, err, tc.want)
		}
	}
	if err := checkDoc(`{"hooks": {"Other": 5}}`, specs[Claude]); err != nil {
		t.Errorf("an event st does not use is the user's business: %v", err)
	}
}

const userConfig = `# my Codex config
model = "gpt-5" # the good one
approval_policy = "on-request"

[projects."/home/u/src"]
trust_level = "trusted"

# hooks of my own
[hooks.state."/home/u/.codex/hooks.json:stop:0:0"]
trusted_hash = "sha256:user"

[some_future_table]
x = [
  ["[not a table]"],
]
s = """
[hooks.state."in a string"]
"""
`

func TestEditTrust(t *testing.T) {
	k1 := "/home/u/.codex/hooks.json:stop:1:0"
	k2 := "/home/u/.codex/hooks.json:session_start:0:0"
	out, err := editTrust([]byte(userConfig), trustEdit{set: []trust{{k1, "sha256:aa"}, {k2, "sha256:bb"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := userConfig + "\n[hooks.state.\"" + k1 + "\"]\ntrusted_hash = \"sha256:aa\"\n\n[hooks.state.\"" + k2 + "\"]\ntrusted_hash = \"sha256:bb\"\n"
	if string(out) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out, want)
	}
	// Same again: no change.
	again, err := editTrust(out, trustEdit{set: []trust{{k1, "sha256:aa"}, {k2, "sha256:bb"}}})
	if err != nil || string(again) != string(out) {
		t.Fatalf("second edit changed the file: %v", err)
	}
	// A new hash replaces only the value.
	upd, err := editTrust(out, trustEdit{set: []trust{{k1, "sha256:cc"}}})
	if err != nil {
		t.Fatal(err)
	}
	if string(upd) != strings.Replace(string(out), "sha256:aa", "sha256:cc", 1) {
		t.Fatalf("update:\n%s", upd)
	}
	// Removing st's keys gives the original back.
	back, err := editTrust(upd, trustEdit{remove: []string{k1, k2}})
	if err != nil {
		t.Fatal(err)
	}
	if string(back) != userConfig {
		t.Fatalf("remove gave:\n%s", back)
	}
	// Into an empty file and out again: empty again.
	in, err := editTrust(nil, trustEdit{set: []trust{{k1, "a"}, {k2, "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := editTrust(in, trustEdit{remove: []string{k1, k2}}); err != nil || len(out) != 0 {
		t.Fatalf("remove from %q gave %q, %v", in, out, err)
	}
	if out, err := editTrust(in, trustEdit{remove: []string{k1}}); err != nil || string(out) != "[hooks.state.\""+k2+"\"]\ntrusted_hash = \"b\"\n" {
		t.Fatalf("removing the first table gave %q, %v", out, err)
	}
	// A moved hook's trust moves with it.
	mv, err := editTrust([]byte(userConfig), trustEdit{rename: map[string]string{"/home/u/.codex/hooks.json:stop:0:0": "/home/u/.codex/hooks.json:stop:3:0"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(mv) != strings.Replace(userConfig, "stop:0:0", "stop:3:0", 1) {
		t.Fatalf("rename gave:\n%s", mv)
	}
}

func TestEditTrustForms(t *testing.T) {
	k := "/h/hooks.json:stop:0:0"
	for _, tc := range []struct{ name, in, want string }{
		{"empty file", "", "[hooks.state.\"" + k + "\"]\ntrusted_hash = \"H\"\n"},
		{"no final newline", "a = 1", "a = 1\n\n[hooks.state.\"" + k + "\"]\ntrusted_hash = \"H\"\n"},
		{"table without hash", "[hooks.state.\"" + k + "\"]\nenabled = true\n", "[hooks.state.\"" + k + "\"]\ntrusted_hash = \"H\"\nenabled = true\n"},
		{"dotted key", "hooks.state.\"" + k + "\".trusted_hash = \"old\" # mine\n", "hooks.state.\"" + k + "\".trusted_hash = \"H\" # mine\n"},
		{"inline table", "[hooks.state]\n\"" + k + "\" = { trusted_hash = 'old', enabled = true }\n", "[hooks.state]\n\"" + k + "\" = { trusted_hash = \"H\", enabled = true }\n"},
		{"crlf", "a = 1\r\n", "a = 1\r\n\r\n[hooks.state.\"" + k + "\"]\r\ntrusted_hash = \"H\"\r\n"},
	} {
		out, err := editTrust([]byte(tc.in), trustEdit{set: []trust{{k, "H"}}})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if string(out) != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, out, tc.want)
		}
	}
	// Forms st does not edit are refused, never written broken.
	for _, in := range []string{
		"hooks = { state = {} }\n",
		"[hooks.state]\n\"" + k + "\" = { enabled = true }\n",
		"a = \n",
	} {
		if out, err := editTrust([]byte(in), trustEdit{set: []trust{{k, "H"}}}); err == nil {
			t.Errorf("%q: edited into %q", in, out)
		}
	}
}

func FuzzEditDoc(f *testing.F) {
	f.Add(userSettings)
	f.Add(`{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"/a/st hook claude Stop"}]}]}}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, doc string) {
		sp := specs[Claude]
		ed, err := editDoc(doc, sp, testST, true)
		var me *MalformedError
		if errors.As(err, &me) {
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		again, err := editDoc(ed.out, sp, testST, true)
		if err != nil || again.changed {
			t.Fatalf("install is not idempotent on %q: %v", doc, err)
		}
		if _, err := editDoc(ed.out, sp, testST, false); err != nil {
			t.Fatalf("uninstall after install of %q: %v", doc, err)
		}
	})
}

func FuzzEditTrust(f *testing.F) {
	f.Add(userConfig)
	f.Add("")
	f.Add("[hooks.state.\"k\"]\ntrusted_hash = \"x\"\n")
	f.Fuzz(func(t *testing.T, doc string) {
		out, err := editTrust([]byte(doc), trustEdit{set: []trust{{"k", "H"}}})
		if err != nil {
			return
		}
		st, err := readTrust(out)
		if err != nil || st["k"] != "H" {
			t.Fatalf("%q -> %q: %v %v", doc, out, st, err)
		}
	})
}
