package orch

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/testutil/faketmux"
	"github.com/sophonz/st/internal/tmux"
)

// TestNewerFilesAreRefused (issue 24, item 5): run.json and
// tmux-layout.json carry their form's version. An st that finds a newer
// one (a newer st wrote it, then an older one replaced it) leaves it out,
// says what to do, and never writes it; its own files carry its version.
func TestNewerFilesAreRefused(t *testing.T) {
	newer := `{"format": 99, "id": "run-new", "objective": "from the future", "coordinator": "%1", "workers": []}` + "\n"
	layout := `{"format": 99, "sessions": [{"name": "main", "windows": []}], "server": "1:2"}` + "\n"
	h := newHarness(t, api.Working, func(*faketmux.Server) {})
	home := h.home
	// A second manager on the same home, as after an older st's start.
	h.m.Close()
	for path, text := range map[string]string{
		filepath.Join(home, "orch", "run-new", "run.json"): newer,
		filepath.Join(home, "tmux-layout.json"):            layout,
	} {
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m, err := NewManager(context.Background(), Config{Home: home, STBin: "/bin/st", Tmux: tmux.NewWithRunner("/tmp/fake.sock", h.tm), ReadWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	st := m.Status()
	joined := strings.Join(st.Problems, "\n")
	for _, want := range []string{"run-new/run.json was written by a newer st (run.json format 99", "tmux-layout.json was written by a newer st (format 99", "Try: install the newer st again"} {
		if !strings.Contains(joined, want) {
			t.Errorf("st status problems do not say %q:\n%s", want, joined)
		}
	}
	if st.Runs != 1 {
		t.Errorf("%d runs loaded, want only st's own", st.Runs)
	}
	// st works on: its own run is written (with its format), the newer
	// files are not.
	if err := m.rest.record(tmux.Layout{Sessions: []tmux.LayoutSession{{Name: "main"}}, Server: "3:4"}); err != nil {
		t.Fatal(err)
	}
	m.reg.mu.Lock()
	err = m.saveLocked(m.reg.runs[testRun])
	m.reg.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	m.Sync()
	for path, text := range map[string]string{
		filepath.Join(home, "orch", "run-new", "run.json"): newer,
		filepath.Join(home, "tmux-layout.json"):            layout,
	} {
		if got, _ := os.ReadFile(path); string(got) != text {
			t.Errorf("%s was written:\n%s", path, got)
		}
	}
	own, _ := os.ReadFile(filepath.Join(home, "orch", testRun, "run.json"))
	if !strings.Contains(string(own), `"format":`+strconv.Itoa(api.RunFormat)) {
		t.Errorf("st's own run.json has no format:\n%s", own)
	}
}
