package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A state file st can start without: missing is nothing to say, one that
// decodes is read, and one that does not is copied aside before st goes
// on without it, the file itself left as it was.
func TestReadJSONOrSetAside(t *testing.T) {
	dir := t.TempDir()
	var v map[string]int
	if found, kept, err := ReadJSONOrSetAside(filepath.Join(dir, "none.json"), &v); found || kept != "" || err != nil {
		t.Errorf("a missing file: %v, %q, %v; want nothing", found, kept, err)
	}
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if found, kept, err := ReadJSONOrSetAside(good, &v); !found || kept != "" || err != nil || v["a"] != 1 {
		t.Errorf("a good file: %v, %q, %v, %v", found, kept, err, v)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"a":`), 0o600); err != nil {
		t.Fatal(err)
	}
	found, kept, err := ReadJSONOrSetAside(bad, &v)
	if !found || !errors.Is(err, ErrCorrupt) || kept != bad+".corrupt-1" {
		t.Fatalf("a bad file: %v, %q, %v; want found, ErrCorrupt, kept at %s.corrupt-1", found, kept, err, bad)
	}
	for _, p := range []string{bad, kept} {
		if b, err := os.ReadFile(p); err != nil || string(b) != `{"a":` {
			t.Errorf("%s: %q, %v; want the bad file's bytes", p, b, err)
		}
	}
}
