package daemon

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/api"
)

// An answer asked for indented (st worker list --json) is what the
// encoder's own indentation made of it, byte for byte, and says so in
// its header; one not asked for is compact.
func TestAnswerIndented(t *testing.T) {
	now := time.Date(2026, 12, 7, 16, 0, 0, 0, time.UTC)
	views := []api.WorkerView{
		{Worker: api.Worker{ID: "%2", Name: "w1", Agent: "claude", State: api.Done, Since: now, Summary: "did \"it\" {all} [of it], <checked>\n"}, Run: "run-1", For: "3s"},
		{Worker: api.Worker{ID: "%3", Name: "w2", Agent: "codex", State: api.Working, Since: now}, Run: "run-1"},
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	if err := enc.Encode(views); err != nil {
		t.Fatal(err)
	}
	for _, indent := range []bool{true, false} {
		r := httptest.NewRequest(http.MethodPost, "/v1/workers/list", strings.NewReader("{}"))
		if indent {
			r.Header.Set(api.IndentHeader, "1")
		}
		w := httptest.NewRecorder()
		answer(w, r, func([]byte) (any, error) { return views, nil })
		got := w.Body.String()
		if indent {
			if got != want.String() || w.Header().Get(api.IndentHeader) == "" {
				t.Errorf("indented answer (header %q):\n%s\nwant\n%s", w.Header().Get(api.IndentHeader), got, want.String())
			}
			continue
		}
		compact, _ := json.Marshal(views)
		if got != string(compact)+"\n" || w.Header().Get(api.IndentHeader) != "" {
			t.Errorf("compact answer: %s", got)
		}
	}
}
