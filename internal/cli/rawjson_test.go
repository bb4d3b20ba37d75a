package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

// TestRawJSONPrintsAsDecoded: st worker list --json prints the daemon's
// answer as it came, indented (printRawJSON), and that must be what
// decoding it and printing the value printed before: byte for byte, with
// times, text a terminal or a browser treats specially, and no workers.
func TestRawJSONPrintsAsDecoded(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 123456789, time.UTC)
	for _, ws := range [][]api.WorkerView{
		nil,
		{},
		{{Worker: api.Worker{ID: "%3", Name: "w<1>&", State: api.Working, Since: at, StartedAt: at, Summary: "한국어 \"quoted\"\n\ttab"}, For: "6s", Run: "run-abc123"},
			{Worker: api.Worker{ID: "%4~mx4q9gcx", Name: "past", State: api.Done, ReportedAt: &at}, ParentGone: true}},
	} {
		var daemon bytes.Buffer // as the daemon answers (daemon.answer)
		if err := json.NewEncoder(&daemon).Encode(ws); err != nil {
			t.Fatal(err)
		}
		var decoded []api.WorkerView
		if err := json.Unmarshal(daemon.Bytes(), &decoded); err != nil {
			t.Fatal(err)
		}
		var before, now bytes.Buffer
		if err := printJSON(&before, decoded); err != nil {
			t.Fatal(err)
		}
		if err := printRawJSON(&now, daemon.Bytes()); err != nil {
			t.Fatal(err)
		}
		if before.String() != now.String() {
			t.Errorf("printed raw:\n%s\nprinted decoded:\n%s", now.String(), before.String())
		}
	}
	if err := printRawJSON(&bytes.Buffer{}, json.RawMessage("{not json")); err == nil {
		t.Error("an answer that is not JSON printed with no error")
	}
}
