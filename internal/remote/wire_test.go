package remote

import (
	"bytes"
	"strings"
	"testing"
)

// TestRelayFirstLine: a stream's first line is read a byte at a time up to
// its newline, leaving what follows (the machines' TLS) in the stream, and
// a line over RelayLineMax is refused rather than read on without end.
func TestRelayFirstLine(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteLine(&buf, RelayOpen{To: "beta"}); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("\x16\x03\x01 tls after it")
	line, err := ReadLine(&buf)
	if err != nil || string(line) != `{"to":"beta"}` {
		t.Fatalf("ReadLine = %q, %v", line, err)
	}
	if rest := buf.String(); rest != "\x16\x03\x01 tls after it" {
		t.Errorf("ReadLine took what follows the line: %q left", rest)
	}
	if _, err := ReadLine(strings.NewReader(strings.Repeat("x", RelayLineMax+1) + "\n")); err == nil {
		t.Error("a first line over RelayLineMax was read")
	}
}

// TestValidName: accounts and slugs are lower-case letters, digits and
// '-', 1 to 63 of them, not starting with '-' (they are host names of the
// certificates' st:// URIs and file names on the machines).
func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"acme": true, "ci-mac-2": true, "a": true, strings.Repeat("a", 63): true,
		"": false, "-acme": false, "Acme": false, "ac me": false, "acme/..": false, "ac.me": false,
		strings.Repeat("a", 64): false, "café": false,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}
