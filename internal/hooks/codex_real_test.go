//go:build realclients

package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/testutil/realagent"
)

// TestRealCodexTrust runs the real, pinned `codex app-server` (from
// tests/realclients) in a private HOME: install writes trust from its
// hooks/list hashes, and a second hooks/list of our own then reports each
// of st's hooks "trusted", while the user's own hook stays untrusted.
func TestRealCodexTrust(t *testing.T) {
	codex := filepath.Join(realagent.ModuleRoot(t), "tests", "realclients", "node_modules", ".bin", "codex")
	if _, err := os.Stat(codex); err != nil {
		// Not a skip: a test of the real client that does not run proves nothing.
		t.Fatalf("the real codex is missing (%v): run scripts/test, which installs it (npm install in tests/realclients)", err)
	}
	home := t.TempDir()
	// The codex app-servers this test starts (HOME here) end with it.
	testutil.CheckNoLeaks(t, home)
	codexHome := filepath.Join(home, ".codex")
	e := &testEnv{home: home, codex: codexHome}
	hooksJSON := e.write(t, ".codex/hooks.json", codexUserHooks, 0o644)
	config := e.write(t, ".codex/config.toml", userConfig, 0o600)
	env := map[string]string{"HOME": home, "PATH": os.Getenv("PATH")}
	opts := Options{
		Home: home, St: testST, CodexBin: codex, Agents: []string{Codex},
		Getenv: func(k string) string { return env[k] },
		// Its own environment (node must be found), HOME and CODEX_HOME set over it.
		Environ: os.Environ(),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	r, err := Install(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	a := agentReport(t, r, Codex)
	if a.Error != "" || a.Installed != 10 || a.Trust == nil || a.Trust.Error != "" || !a.Trust.Known || a.Trust.Trusted != 10 {
		t.Fatalf("install: %+v, trust %+v", a, a.Trust)
	}
	if cfg := read(t, config); !strings.HasPrefix(cfg, userConfig) || strings.Count(cfg[len(userConfig):], "trusted_hash = \"sha256:") != 10 {
		t.Fatalf("config.toml:\n%s", cfg)
	}

	// Ask Codex ourselves.
	cenv := append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "CODEX_HOME=")
	}), "HOME="+home, "CODEX_HOME="+codexHome)
	list, err := ListCodexHooks(ctx, codex, cenv, home)
	if err != nil {
		t.Fatal(err)
	}
	st, user := 0, 0
	for _, h := range list.Hooks {
		if !samePath(h.SourcePath, hooksJSON) {
			continue
		}
		if _, _, ok := parseCommand(h.Command, Codex, testST); ok {
			st++
			if h.TrustStatus != "trusted" {
				t.Errorf("st's %s hook is %q (key %s)", h.EventName, h.TrustStatus, h.Key)
			}
			if h.EventName == "preToolUse" {
				b, _ := json.Marshal(h)
				t.Logf("hooks/list entry: %s", b)
			}
		} else {
			user++
			if h.TrustStatus == "trusted" {
				t.Errorf("the user's hook %q was trusted by st", h.Command)
			}
		}
	}
	if st != 10 || user != 1 {
		t.Errorf("hooks/list has %d st hooks and %d of the user's, want 10 and 1: %+v", st, user, list)
	}
	if len(list.Errors) > 0 {
		t.Errorf("codex reports errors: %q", list.Errors)
	}

	// Again: nothing to change; status agrees.
	r, _ = Install(ctx, opts)
	if a := agentReport(t, r, Codex); a.Changed || a.Trust.Changed || a.Trust.Trusted != 10 {
		t.Errorf("second install: %+v %+v", a, a.Trust)
	}
	r, _ = Status(ctx, opts)
	if a := agentReport(t, r, Codex); a.Trust.Trusted != 10 {
		t.Errorf("status: %+v", a.Trust)
	}

	// Uninstall: config.toml as it was; hooks.json holds the user's hook.
	if _, err := Uninstall(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if got := read(t, config); got != userConfig {
		t.Errorf("config.toml after uninstall:\n%s", got)
	}
	if got := gjson.Get(read(t, hooksJSON), "hooks.Stop.#").Int(); got != 1 {
		t.Errorf("hooks.json after uninstall:\n%s", read(t, hooksJSON))
	}

	// No app-server is left running for this CODEX_HOME.
	if runtime.GOOS == "linux" {
		if pids := procsWithEnv(t, "CODEX_HOME="+codexHome); len(pids) > 0 {
			t.Errorf("codex processes left running: %v", pids)
		}
	}
}

// procsWithEnv lists the processes whose environment holds kv.
func procsWithEnv(t *testing.T, kv string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, x := range bytes.Split(b, []byte{0}) {
			if string(x) == kv {
				cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
			}
		}
	}
	return out
}
