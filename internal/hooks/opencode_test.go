package hooks

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpencodePluginRoundTrip: st hooks install writes st's plugin into
// opencode's plugin folder (made for it), a second install changes
// nothing, status says every event is st's, and uninstall leaves the
// config folder as it was: the plugin and the folder st made gone, the
// user's own plugin and opencode.json untouched.
func TestOpencodePluginRoundTrip(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "opencode.json")
	os.WriteFile(cfg, []byte(`{"model":"anthropic/x"}`+"\n"), 0o600)
	o := Options{Home: home, St: "/opt/my st/st", Agents: []string{Opencode}, Getenv: func(string) string { return "" }}
	r, err := Install(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	a := r.Agents[0]
	plugin := filepath.Join(dir, "plugin", OpencodePluginName)
	if a.Error != "" || !a.Changed || !a.Created || a.File != plugin || a.Installed != a.Total || a.Total == 0 {
		t.Fatalf("install: %+v", a)
	}
	data, _ := os.ReadFile(plugin)
	if !strings.Contains(string(data), `const ST = "/opt/my st/st";`) || !opencodeMadeFolder(data) {
		t.Fatalf("the plugin:\n%s", data)
	}
	if r, _ := Install(context.Background(), o); r.Agents[0].Changed {
		t.Errorf("a second install changed the plugin: %+v", r.Agents[0])
	}
	// Another st's plugin is st's, not current.
	other := o
	other.St = "/usr/bin/st"
	if r, _ := Status(context.Background(), other); r.Agents[0].Installed != 0 || len(r.Agents[0].Other) != r.Agents[0].Total {
		t.Errorf("status for another st: %+v", r.Agents[0])
	}
	r, _ = Uninstall(context.Background(), o)
	if a := r.Agents[0]; a.Error != "" || !a.Changed || a.Installed != 0 {
		t.Fatalf("uninstall: %+v", a)
	}
	if _, err := os.Stat(filepath.Join(dir, "plugin")); !os.IsNotExist(err) {
		t.Errorf("the plugin folder st made is still there: %v", err)
	}
	// The user's own plugin folder and plugin stay.
	mine := filepath.Join(dir, "plugin", "mine.js")
	os.MkdirAll(filepath.Dir(mine), 0o700)
	os.WriteFile(mine, []byte("export const Mine = async () => ({})\n"), 0o600)
	Install(context.Background(), o)
	Uninstall(context.Background(), o)
	if _, err := os.Stat(plugin); !os.IsNotExist(err) {
		t.Errorf("the plugin is still there: %v", err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("the user's plugin went: %v", err)
	}
	if got, _ := os.ReadFile(cfg); string(got) != `{"model":"anthropic/x"}`+"\n" {
		t.Errorf("opencode.json changed: %s", got)
	}
	// A file of st's name that is not st's is never touched.
	os.MkdirAll(filepath.Dir(plugin), 0o700)
	os.WriteFile(plugin, []byte("// mine\n"), 0o600)
	for _, f := range []func(context.Context, Options) (*Report, error){Install, Uninstall} {
		r, _ := f(context.Background(), o)
		if r.Agents[0].Error == "" {
			t.Errorf("a file of the user's at st's name: %+v", r.Agents[0])
		}
	}
	if got, _ := os.ReadFile(plugin); string(got) != "// mine\n" {
		t.Errorf("the user's file changed: %s", got)
	}
}

// TestOpencodePluginParses: the plugin is JavaScript node reads (the
// module opencode loads), whatever st's path.
func TestOpencodePluginParses(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	f := filepath.Join(t.TempDir(), "p.mjs")
	os.WriteFile(f, []byte(OpencodePlugin(`/opt/it's "st"/st`, true)), 0o600)
	if out, err := exec.Command(node, "--check", f).CombinedOutput(); err != nil {
		t.Fatalf("node --check: %v\n%s", err, out)
	}
	data, _ := os.ReadFile(f)
	if got := opencodeRuns(data); got != `/opt/it's "st"/st` {
		t.Errorf("the st it runs: %q", got)
	}
}
