package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// st plugin uninstall takes out its own rules file only: the user's rules,
// and a file of the same name st did not write, stay byte for byte.
func TestUninstallKeepsUserRules(t *testing.T) {
	c := testConfig(t)
	user := filepath.Join(c.CodexRulesDir(), "default.rules")
	userRule := "prefix_rule(pattern = [\"git\", \"status\"], decision = \"allow\")\n"
	if err := os.MkdirAll(c.CodexRulesDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, []byte(userRule), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(t.Context(), c); err == nil {
		t.Fatal("install without claude gave no error")
	}
	if b, err := os.ReadFile(c.CodexRule()); err != nil || !strings.Contains(string(b), `pattern = ["/usr/local/bin/st", ["up",`) {
		t.Fatalf("rule file: %v\n%s", err, b)
	}
	Uninstall(t.Context(), c)
	if b, _ := os.ReadFile(user); string(b) != userRule {
		t.Errorf("the user's rules changed: %q", b)
	}
	if _, err := os.Stat(c.CodexRule()); !os.IsNotExist(err) {
		t.Errorf("st's rule is still there: %v", err)
	}
	foreign := "# mine\n"
	os.WriteFile(c.CodexRule(), []byte(foreign), 0o600)
	rep, _ := Uninstall(t.Context(), c)
	if b, _ := os.ReadFile(c.CodexRule()); string(b) != foreign || len(rep.Agents[1].Notes) != 1 {
		t.Errorf("a sophonz.rules st did not write: %q, notes %v", b, rep.Agents[1].Notes)
	}
}
