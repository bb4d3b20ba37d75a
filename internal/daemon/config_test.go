package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil"
)

// loadConfigText loads a config.toml holding text, with no environment.
func loadConfigText(t testing.TB, text string) (Config, string, error) {
	home := t.TempDir()
	path := filepath.Join(home, "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(home, func(string) string { return "" })
	return c, path, err
}

// TestConfigErrorsSayTheLineAndWhatToDo: a config.toml st cannot use is
// refused with its line, what the setting takes (in st's words, never
// go-toml's about Go's types), the nearest setting for a key st does not
// know, and a Try line that says to fix that line.
func TestConfigErrorsSayTheLineAndWhatToDo(t *testing.T) {
	tests := []struct{ text, want, hint string }{
		{"web_port = \"x\"\n", "line 1 of PATH: web_port takes a port number", "fix line 1 of PATH"},
		{"[agents.toy]\nprogram = \"toy\"\nready_marker = [\"> \"]\n", `line 3 of PATH: st has no setting "agents.toy.ready_marker"`, "fix line 3 of PATH"},
		{"\n\nweb_prot = 7000\n", `line 3 of PATH: st has no setting "web_prot" (did you mean web_port?)`, "fix line 3 of PATH; the settings are agents, agents_start_sim,"},
		{"heartbeat = \"10s\"\nhaertbeat = \"5s\"\n[extra]\nx = 1\n", `line 2 of PATH: st has no setting "haertbeat" (did you mean heartbeat?)` + "\n" + `line 3 of PATH: st has no setting "extra"`, "fix line 2 of PATH"},
		{"heartbeat = \"zz\"\n", `line 1 of PATH: heartbeat takes a duration above zero in quotes, such as "10s"`, "fix line 1"},
		{"peer_retry = \"-1m\"\n", "line 1 of PATH: peer_retry takes a duration above zero", "fix line 1"},
		{"# hi\nheartbeat = 5\n", "line 2 of PATH: heartbeat takes a duration", "fix line 2"},
		{"web_hosts = \"a\"\n", "line 1 of PATH: web_hosts takes a list of host names", "fix line 1"},
		{"agents_start_sim = \"yes\"\n", "line 1 of PATH: agents_start_sim takes true or false", "fix line 1"},
		{"web_port = 1\nweb_port = 2\n", "line 2 of PATH sets web_port a second time", "keep one of the two lines"},
		{"web_port = 99999\n", "line 1 of PATH: web_port takes a port number from 1 to 65535", "fix line 1"},
		{"web_port = 99999999999999999999\n", "line 1 of PATH: web_port takes a port number", "fix line 1"},
		{"tmux_socket = \n", "line 1 of PATH is not valid TOML (at column 15: unexpected character U+000A at start of value)", "fix line 1"},
		{"[web_port]\nx = 1\n", "line 1 of PATH: web_port takes", "fix line 1"},
	}
	for _, tt := range tests {
		_, path, err := loadConfigText(t, tt.text)
		var ae *api.Error
		if !errors.As(err, &ae) {
			t.Errorf("config %q: error %v (%T); want an st refusal", tt.text, err, err)
			continue
		}
		want := strings.ReplaceAll(tt.want, "PATH", path)
		hint := strings.ReplaceAll(tt.hint, "PATH", path)
		if !strings.Contains(ae.Message, want) || !strings.Contains(ae.Hint, hint) {
			t.Errorf("config %q:\n%s\nwant %q, Try: %q", tt.text, ae.Error(), want, hint)
		}
		if w := testutil.GoWord(ae.Error()); w != "" {
			t.Errorf("config %q: the refusal carries %q: %s", tt.text, w, ae.Error())
		}
	}
}

// TestSettingsAreConfig: the settings a refusal names are Config's keys,
// each of them.
func TestSettingsAreConfig(t *testing.T) {
	var keys []string
	ct := reflect.TypeOf(Config{})
	for i := range ct.NumField() {
		if k := ct.Field(i).Tag.Get("toml"); k != "" && k != "-" {
			keys = append(keys, k)
			if settings[k] == "" {
				t.Errorf("config.toml's %s has no words in settings", k)
			}
		}
	}
	if len(keys) != len(settings) {
		t.Errorf("settings names %d keys, Config has %d (%v)", len(settings), len(keys), keys)
	}
}

// TestConfigTakesEveryKnownSetting: a config.toml of every setting loads.
func TestConfigTakesEveryKnownSetting(t *testing.T) {
	c, _, err := loadConfigText(t, `tmux_socket = "st"
web_port = 7001
push_url = "https://ntfy.sh/x"
push_answer_url = "https://st.example.net"
web_hosts = ["st.example.net"]
peer_listen = "off"
heartbeat = "10s"
peer_retry = "1m"
agents_start_sim = true
on_limit_move = "codex"
[tokens]
budget = "$5"
[tokens.prices]
date = "2026-12-01"
[tokens.prices.models.claude-sonnet-4]
input = 3.0
output = 15.0
cache_read = 0.3
cache_write = 3.75
`)
	if err != nil || c.WebPort != 7001 || c.Heartbeat.Seconds() != 10 || !c.AgentsStartSim || c.OnLimitMove != "codex" {
		t.Fatalf("LoadConfig = %+v, %v", c, err)
	}
	if b := c.Tokens.DefaultBudget(); b.USD != 5 || c.Tokens.Prices.Models["claude-sonnet-4"].CacheWrite != 3.75 || c.Tokens.Prices.Date != "2026-12-01" {
		t.Fatalf("[tokens] read as %+v (budget %+v)", c.Tokens, b)
	}
}

// TestConfigRefusesTokensItCannotUse: a price table with no date (a
// cost whose prices' age no one can tell), a dollar budget with no
// prices, a budget st cannot read.
func TestConfigRefusesTokensItCannotUse(t *testing.T) {
	for text, want := range map[string]string{
		"[tokens.prices.models.x]\ninput = 1.0\n":                                          "needs date",
		"[tokens]\nbudget = \"$5\"\n":                                                      "a dollar budget needs a price table",
		"[tokens]\nbudget = \"lots\"\n":                                                    "write tokens (500k",
		"[tokens.prices]\ndate = \"2026-12-01\"\n[tokens.prices.models.x]\ninput = -1.0\n": "below zero",
		"[tokens]\nnear_limit = 150\n":                                                     "near_limit = 150 is not a share between 1 and 100",
		"[tokens]\nnear_limit = -5\n":                                                      "near_limit = -5 is not a share",
	} {
		_, _, err := loadConfigText(t, text)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config %q: %v, want a refusal saying %q", text, err, want)
		}
	}
}

// FuzzConfig decodes any config.toml: it loads, or is refused as st
// refuses a setting: with a Try line, and in no words of Go's.
func FuzzConfig(f *testing.F) {
	for _, s := range []string{
		"", "web_port = 7001\n", "web_port = \"x\"", "web_prot = 1", "[x]\ny = 2", "heartbeat = 5", "heartbeat = \"zz\"",
		"heartbeat = \"-1s\"", "web_hosts = [1]", "web_hosts = \"a\"", "agents_start_sim = \"yes\"", "a = ", "= 1",
		"web_port = 1\nweb_port = 2", "[web_port]\nx = 1", "[[web_port]]", "web_port.x = 1", "web_port = 1.5",
		"web_port = 99999999999999999999", "tmux_socket = 1", "peer_listen = \"nowhere\"", "push_answer_url = \"ftp://x\"",
		"web_port = 70000", "\"web_port\" = 7001", "web_port = 0x1F", "peer_retry = 1979-05-27", "x = {a = 1}",
		"\xff = 1", "web_port = \"\x1b[2J\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		_, _, err := loadConfigText(t, text)
		if err == nil {
			return
		}
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Hint == "" {
			t.Fatalf("config %q: refused without a Try line: %v", text, err)
		}
		if w := testutil.GoWord(err.Error()); w != "" {
			t.Fatalf("config %q: the refusal carries %q: %s", text, w, err)
		}
	})
}
