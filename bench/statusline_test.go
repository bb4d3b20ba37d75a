package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/bench/benchfig"
	"github.com/sophonz/st/internal/testutil"
)

// BenchmarkStatusLine gives what st's status line adds to the user's own
// (issue 35): Claude waits for its status-line command after each
// response. statusline_passthrough is `st statusline --then 'cat >
// /dev/null; printf mine'` with a status line's JSON on stdin, run in a
// pane of st's tmux server with st up (so the daemon checks the caller's
// parents against the pane and takes the JSON), against the floor of the
// user's command alone (`sh -c` of it) in the same pane, interleaved one
// by one, 40 of each, medians; statusline_handover is the same against
// `st version` then the user's command (st's own start as its floor: what
// the hand-over to the daemon adds). All run from a shell script in the
// pane, which times each with date +%s%N.
func BenchmarkStatusLine(b *testing.B) {
	r := newRig(b)
	r.up()
	payload := r.writeFile("sl.json", `{"session_id":"3f1c0a52-7d1e-4c55-9a0e-5b2d6f0e8a11","cost":{"total_cost_usd":0.42},`+
		`"rate_limits":{"five_hour":{"used_percentage":50,"resets_at":`+strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)+`}}}`, 0o600)
	user := `cat > /dev/null; printf mine`
	script := r.writeFile("sl-bench.sh", fmt.Sprintf(`n=$1
i=0
while [ $i -lt $n ]; do
  a=$(date +%%s%%N); %s statusline --then '%s' < %s > /dev/null; z=$(date +%%s%%N); echo "st $((z-a))"
  a=$(date +%%s%%N); sh -c '%s' < %s > /dev/null; z=$(date +%%s%%N); echo "floor $((z-a))"
  a=$(date +%%s%%N); %s version > /dev/null; sh -c '%s' < %s > /dev/null; z=$(date +%%s%%N); echo "start $((z-a))"
  i=$((i+1))
done > %s/sl-times.part
mv %s/sl-times.part %s/sl-times
`, r.bin, user, payload, user, payload, r.bin, user, payload, r.dir, r.dir, r.dir), 0o600)
	for i := 0; i < b.N; i++ {
		os.Remove(filepath.Join(r.dir, "sl-times"))
		if _, err := r.tmux("send-keys", "-t", r.coord, "-l", "sh "+script+" 40"); err != nil {
			b.Fatal(err)
		}
		if _, err := r.tmux("send-keys", "-t", r.coord, "Enter"); err != nil {
			b.Fatal(err)
		}
		var data []byte
		testutil.WaitFor(b, 120*time.Second, func() (bool, string) {
			var err error
			data, err = os.ReadFile(filepath.Join(r.dir, "sl-times"))
			return err == nil, "the status line's timings: " + r.explain(r.coord)
		})
		var st, floor, start []time.Duration
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			f := strings.Fields(l)
			if len(f) != 2 {
				b.Fatalf("a line of the timings: %q", l)
			}
			ns, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				b.Fatalf("a line of the timings: %q", l)
			}
			switch f[0] {
			case "st":
				st = append(st, time.Duration(ns))
			case "floor":
				floor = append(floor, time.Duration(ns))
			default:
				start = append(start, time.Duration(ns))
			}
		}
		benchfig.RatioMs(b, "statusline_passthrough", benchfig.NewStats(st).Median(), benchfig.NewStats(floor).Median())
		// The same against st's own start (st version) before the
		// user's command: what the hand-over to the daemon adds.
		benchfig.RatioMs(b, "statusline_handover", benchfig.NewStats(st).Median(), benchfig.NewStats(start).Median())
	}
	// The daemon took them: the limit they said is st's.
	out := r.mustRun(r.st(r.coord, "status", "--json"))
	if !strings.Contains(out, `"used_percent": 50`) {
		b.Fatalf("st status --json does not hold the status line's limit:\n%s\n%s", out, r.explain(r.coord))
	}
}
