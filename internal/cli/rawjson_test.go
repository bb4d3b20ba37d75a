package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/client"
)

// TestRawJSONPrintsAsDecoded: st worker list --json prints the daemon's
// answer as it came, indented by the daemon (client.IndentedJSON), or by
// the client when an older daemon did not (client.Indent), and either
// must be what decoding it and printing the value printed before: byte
// for byte, with times, text a terminal or a browser treats specially,
// and no workers.
func TestRawJSONPrintsAsDecoded(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 123456789, time.UTC)
	for _, ws := range [][]api.WorkerView{
		nil,
		{},
		{{Worker: api.Worker{ID: "%3", Name: "w<1>&", State: api.Working, Since: at, StartedAt: at, Summary: "한국어 \"quoted\"\n\ttab"}, For: "6s", Run: "run-abc123"},
			{Worker: api.Worker{ID: "%4~mx4q9gcx", Name: "past", State: api.Done, ReportedAt: &at}, ParentGone: true}},
	} {
		var daemon, indented bytes.Buffer // as the daemon answers (daemon.answer), and when asked to indent
		if err := json.NewEncoder(&daemon).Encode(ws); err != nil {
			t.Fatal(err)
		}
		enc := json.NewEncoder(&indented)
		enc.SetIndent("", "  ")
		if err := enc.Encode(ws); err != nil {
			t.Fatal(err)
		}
		var decoded []api.WorkerView
		if err := json.Unmarshal(daemon.Bytes(), &decoded); err != nil {
			t.Fatal(err)
		}
		var before bytes.Buffer
		if err := printJSON(&before, decoded); err != nil {
			t.Fatal(err)
		}
		now, err := client.Indent(daemon.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if before.String() != string(now) {
			t.Errorf("printed raw, indented by the client:\n%s\nprinted decoded:\n%s", now, before.String())
		}
		if before.String() != indented.String() {
			t.Errorf("printed raw, indented by the daemon:\n%s\nprinted decoded:\n%s", indented.String(), before.String())
		}
	}
	if _, err := client.Indent([]byte("{not json")); err == nil {
		t.Error("an answer that is not JSON printed with no error")
	}
}
