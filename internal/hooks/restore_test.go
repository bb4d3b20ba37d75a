package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// st hooks uninstall leaves the user's files as they were before st's
// first install, byte for byte: a settings.json in tabs that another
// program rewrote in its own layout meanwhile, a config.toml whose trust
// entries go, and a hooks.json that was not there at all (it goes, with
// every backup st made).
func TestUninstallRestoresOriginals(t *testing.T) {
	e := newEnv(t, "ok")
	settings := e.write(t, ".claude/settings.json", userSettings, 0o640)
	config := e.write(t, ".codex/config.toml", userConfig, 0o600)
	hooksJSON := filepath.Join(e.codex, "hooks.json")
	ctx := context.Background()
	if _, err := Install(ctx, e.opts); err != nil {
		t.Fatal(err)
	}
	// Another program (claude plugin install) rewrites settings.json in
	// its own layout and later leaves an empty object of its own.
	if err := KeepOriginal(settings, "{}\n"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(`{"model": "opus", "enabledPlugins": {}, "hooks": `+
		extract(t, read(t, settings), "hooks")+`, "permissions": {"allow": ["Bash(ls:*)"], "deny": []}, "env": {"A": "1"}}`), 0o640); err != nil {
		t.Fatal(err)
	}
	r, err := Uninstall(ctx, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, settings); got != userSettings {
		t.Errorf("settings.json after uninstall:\n%s\nwant, byte for byte:\n%s", got, userSettings)
	}
	if fi, err := os.Stat(settings); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("settings.json mode: %v %v", fi.Mode(), err)
	}
	if got := read(t, config); got != userConfig {
		t.Errorf("config.toml after uninstall:\n%s", got)
	}
	for _, p := range []string{hooksJSON, settings + BackupSuffix, config + BackupSuffix, hooksJSON + BackupSuffix, hooksJSON + AbsentSuffix} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}
	if !agentReport(t, r, Claude).Restored || !agentReport(t, r, Codex).Restored || !agentReport(t, r, Codex).Trust.Restored {
		t.Errorf("report: %+v", r)
	}
}

// A file whose text means what no file means ("{}" and a newline, an
// empty config.toml) is put back as it was, byte for byte, not removed;
// a file that was not there goes again. The backup of the first is not
// taken for the mark of the second.
func TestUninstallRestoresEmptyOriginals(t *testing.T) {
	e := newEnv(t, "ok")
	settings := e.write(t, ".claude/settings.json", "{}\n", 0o600)
	config := e.write(t, ".codex/config.toml", "", 0o600)
	hooksJSON := filepath.Join(e.codex, "hooks.json")
	ctx := context.Background()
	if _, err := Install(ctx, e.opts); err != nil {
		t.Fatal(err)
	}
	if read(t, settings) == "{}\n" || read(t, config) == "" {
		t.Fatalf("install changed nothing: %q %q", read(t, settings), read(t, config))
	}
	if _, err := Uninstall(ctx, e.opts); err != nil {
		t.Fatal(err)
	}
	if got := read(t, settings); got != "{}\n" {
		t.Errorf("settings.json after uninstall = %q, want %q", got, "{}\n")
	}
	if fi, err := os.Stat(config); err != nil || fi.Size() != 0 {
		t.Errorf("config.toml after uninstall: %v %v, want it there and empty", fi, err)
	}
	for _, p := range []string{hooksJSON, settings + BackupSuffix, settings + AbsentSuffix, config + BackupSuffix, hooksJSON + AbsentSuffix} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}
}

// A file the user changed while st's hooks were in keeps the change: st
// takes out its own hooks and keeps the backup of the original.
func TestUninstallKeepsUserChanges(t *testing.T) {
	e := newEnv(t, "")
	settings := e.write(t, ".claude/settings.json", userSettings, 0o600)
	e.opts.Agents = []string{Claude}
	ctx := context.Background()
	if _, err := Install(ctx, e.opts); err != nil {
		t.Fatal(err)
	}
	changed := read(t, settings)
	changed = changed[:len(changed)-2] + ",\n\t\"theme\": \"light\"\n}\n"
	if err := os.WriteFile(settings, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Uninstall(ctx, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	got := read(t, settings)
	if got != userSettings[:len(userSettings)-2]+",\n\t\"theme\": \"light\"\n}\n" {
		t.Errorf("settings.json:\n%s", got)
	}
	if agentReport(t, r, Claude).Restored || read(t, settings+BackupSuffix) != userSettings {
		t.Errorf("the backup of the original went, or the report says restored: %+v", r)
	}
}

func extract(t *testing.T, doc, key string) string {
	t.Helper()
	var m map[string]any
	if err := jsonUnmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	return jsonMarshal(t, m[key])
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func jsonMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
