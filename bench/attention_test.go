package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sophonz/st/bench/benchfig"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/client"
)

// BenchmarkAttention (issue 34) times an agent's permission prompt to what
// a person sees of it: from the write that releases a PermissionRequest
// hook in a sim worker's pane (its hook relay, as an agent's hook is
// sent) to the attention item visible through st's API (attention_item),
// to `st attention --json` printing it (attention_cli: a process of its
// own polls), and to its push received by a push service on 127.0.0.1
// (attention_push). Each is divided by a bare `st version` process timed
// in the same run. The worker's next hook (PostToolUse) closes the item
// between tries. config.toml's [attention] summary = 0 pushes every item
// at once, as the figure asks.
func BenchmarkAttention(b *testing.B) {
	const n, warmup = 30, 2
	r := newRig(b)
	pushes := newPushRecorder(b)
	r.env = append(r.env, "ST_PUSH_URL="+pushes.url)
	if err := os.MkdirAll(r.home, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.home, "config.toml"), []byte("[attention]\nsummary = 0\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	r.up()
	relay, line := newHookRelay(b, r.dir, "relay-a", r.bin)
	task := relay.taskFile(b, line)
	r.mustRun(r.st(r.coord, "worker", "start", "--agent", "sim", "--task", task, "--name", "asker", "--json"))
	relay.ready(b, 30*time.Second)
	c := client.New(r.home, "")
	var item, cli, push, version []time.Duration
	b.ResetTimer()
	for i := 0; i < n+warmup; i++ {
		t := attentionTry(b, r, c, relay, pushes, i)
		v := r.versionTime()
		if i >= warmup {
			item, cli, push, version = append(item, t.item), append(cli, t.cli), append(push, t.push), append(version, v)
		}
	}
	b.StopTimer()
	it, cl, pu, ve := benchfig.NewStats(item), benchfig.NewStats(cli), benchfig.NewStats(push), benchfig.NewStats(version)
	fmt.Printf("permission prompt to a person over %d prompts: item in st's API median %.1f ms (p99 %.1f), in st attention --json median %.1f ms, push received median %.1f ms (p99 %.1f); st version process median %.1f ms\n",
		len(it), benchfig.Ms(it.Median()), benchfig.Ms(it.Pct(99)), benchfig.Ms(cl.Median()), benchfig.Ms(pu.Median()), benchfig.Ms(pu.Pct(99)), benchfig.Ms(ve.Median()))
	benchfig.RatioMs(b, "attention_item_median", it.Median(), ve.Median())
	benchfig.Figure(b, "attention_item_p99", benchfig.Ms(it.Pct(99)), "ms")
	benchfig.RatioMs(b, "attention_cli_median", cl.Median(), ve.Median())
	benchfig.RatioMs(b, "attention_push_median", pu.Median(), ve.Median())
	benchfig.Figure(b, "attention_push_p99", benchfig.Ms(pu.Pct(99)), "ms")
}

// pushRecorder is a push service on 127.0.0.1 that notes when each
// item's push (X-St-Attention) came.
type pushRecorder struct {
	url string
	mu  sync.Mutex
	got map[string]time.Time
}

func newPushRecorder(b *testing.B) *pushRecorder {
	b.Helper()
	p := &pushRecorder{got: map[string]time.Time{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		p.mu.Lock()
		p.got[req.Header.Get("X-St-Attention")] = time.Now()
		p.mu.Unlock()
	})}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	p.url = "http://" + ln.Addr().String() + "/push"
	return p
}

// at is when id's push came (zero: not yet).
func (p *pushRecorder) at(id string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.got[id]
}

// attentionTiming is one try's figures, from the hook's release.
type attentionTiming struct{ item, cli, push time.Duration }

// attentionTry releases a PermissionRequest hook in the worker's pane and
// times its item to the API, to st attention --json and to its push; the
// worker's PostToolUse then closes it.
func attentionTry(b *testing.B, r *rig, c *client.Client, relay *hookRelay, pushes *pushRecorder, i int) attentionTiming {
	b.Helper()
	ctx := context.Background()
	var before string
	if l, err := c.Attention(ctx, api.AttentionRequest{All: true}); err == nil && len(l.Items) > 0 {
		before = l.Items[0].ID
	}
	payload := hookPayload("", "PermissionRequest", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": fmt.Sprintf("make deploy-%d", i)}})
	if err := os.WriteFile(filepath.Join(relay.dir, "PermissionRequest.json"), []byte(payload), 0o600); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if _, err := relay.goF.WriteString("PermissionRequest\n"); err != nil {
		b.Fatal(err)
	}
	var id string
	if !pollUntil(30*time.Second, func() bool {
		if l, err := c.WaitAttention(ctx, api.AttentionRequest{After: before, Timeout: time.Second}); err == nil && len(l.Items) > 0 {
			id = l.Items[0].ID
		}
		return id != ""
	}) {
		b.Fatalf("no item opened for the permission prompt\n%s", r.explain(r.coord))
	}
	t := attentionTiming{item: time.Since(start)}
	// st attention --json, a process polling as a person's script would.
	if !pollUntil(30*time.Second, func() bool { return containsID(r.mustRun(r.st(r.coord, "attention", "--json")), id) }) {
		b.Fatal("st attention never listed the item")
	}
	t.cli = time.Since(start)
	if line, err := relay.readAck(30 * time.Second); err != nil || line != "PermissionRequest 0" {
		b.Fatalf("hook relay: %q %v", line, err)
	}
	if !pollUntil(30*time.Second, func() bool { return !pushes.at(id).IsZero() }) {
		b.Fatalf("no push for %s", id)
	}
	t.push = pushes.at(id).Sub(start)
	relay.fire(b, "PostToolUse", hookPayload("", "PostToolUse", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "x"}}))
	return t
}

// containsID reports whether st attention --json's output lists id.
func containsID(out, id string) bool { return id != "" && strings.Contains(out, `"`+id+`"`) }
