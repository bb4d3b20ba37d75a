package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClaudeHangIsTriedAgain: a claude that prints and then does not exit
// (seen on a loaded machine) is ended after claudeAttempt and run once
// more; one that hangs both times fails, saying so.
func TestClaudeHangIsTriedAgain(t *testing.T) {
	old := claudeAttempt
	claudeAttempt = 500 * time.Millisecond
	t.Cleanup(func() { claudeAttempt = old })
	dir := t.TempDir()
	// The first run leaves a mark and hangs (exec, so that the kill ends
	// the sleep itself); later runs answer at once.
	hangOnce := filepath.Join(dir, "claude")
	script := "#!/bin/sh\nif [ ! -e " + dir + "/ran ]; then : > " + dir + "/ran; echo started; exec sleep 30; fi\necho 'plugin list'\n"
	if err := os.WriteFile(hangOnce, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cl := claudeCLI{bin: hangOnce, home: dir, env: []string{"PATH=/usr/bin:/bin"}}
	start := time.Now()
	out, err := cl.run(t.Context(), "plugin", "list")
	if err != nil || out != "plugin list" {
		t.Fatalf("run after one hang = %q, %v; want the second try's answer", out, err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("run took %s: the hung try was not ended", took)
	}

	hangs := filepath.Join(dir, "claude-hangs")
	if err := os.WriteFile(hangs, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cl.bin = hangs
	if _, err := cl.run(t.Context(), "plugin", "list"); err == nil || !strings.Contains(err.Error(), "gave up after two tries") {
		t.Fatalf("run of a claude that always hangs = %v; want it to give up after two tries", err)
	}
}
