package webui

import (
	"fmt"
	"testing"
	"time"

	"github.com/sophonz/st/bench/benchfig"
)

// sizes are the numbers of agents measured; the first is every figure's
// floor.
var sizes = []int{10, 100, 300}

// BenchmarkWebUI measures the web UI at 10, 100 and 300 agents, each
// figure beside its value at 10 (webtest.Scale's agents, served by
// internal/web as the daemon serves it):
//
//   - /st/api/state: the body's size, and the median time of 30 fetches;
//   - /st/api/events while every agent changes state once a second (N
//     changes a second in all, 10 s): the messages and bytes a second
//     one listening page gets;
//   - in Chromium (1440 x 900): the graph drawn when it opens (app.js's
//     st:graph measure, median of 10 openings), and, the graph open,
//     every agent changing state once a second for 10 s: how long each
//     drawing of the page took (st:render, median and longest), how many
//     it made a second, the longest frame (requestAnimationFrame's
//     frame-to-frame time) and the long animation frames (over 50 ms).
//
// Then a real daemon with 10 and then 100 sim workers: its
// /st/api/state's size and time (median of 30), 100 beside 10.
//
// Goals (issue 27): the graph drawn under 100 ms at 100 agents, and no
// frame longer than 50 ms while 100 agents change state.
func BenchmarkWebUI(b *testing.B) {
	type at struct {
		size          int
		bytes         int // of the state
		state         float64
		msgs, kbs, ch float64
		page          pageFigures
	}
	var res []at
	ctx := newBrowser(b, 1440, 900)
	for _, n := range sizes {
		p := servePage(b, n)
		r := at{size: n}
		bytes, times := stateTimes(b, p.base+"/st/api/state?token="+p.tok, 30)
		r.state = benchfig.Median(durations(times))
		r.bytes = bytes
		r.msgs, r.kbs, r.ch = eventsFlow(b, p, n, 10*time.Second)
		r.page = browse(b, ctx, p, 10, 10*time.Second)
		fmt.Printf("%d agents: state %d bytes in %.2f ms; events %.1f/s, %.0f KB/s (%.0f changes/s); page loaded in %.0f ms; graph drawn in %.1f ms (median of %d, longest %.1f); "+
			"while all change: %.1f drawings/s, each %.1f ms (median; longest %.1f), longest frame %.1f ms, %d frames over 50 ms (longest %.1f ms)\n",
			n, r.bytes, r.state, r.msgs, r.kbs/1024, r.ch, benchfig.Ms(r.page.loaded), benchfig.Median(r.page.graph), len(r.page.graph), maxOf(r.page.graph),
			r.page.renders, benchfig.Median(r.page.render), maxOf(r.page.render), r.page.longestFrame, r.page.longFrames, r.page.longestLoAF)
		res = append(res, r)
	}
	f := res[0]
	for _, r := range res {
		n := r.size
		scaled(b, "web_state_bytes", n, float64(r.bytes), float64(f.bytes), "B")
		scaled(b, "web_state_time", n, r.state, f.state, "ms")
		scaled(b, "web_events_per_s", n, r.msgs, f.msgs, "msg/s")
		scaled(b, "web_events_kb_per_s", n, r.kbs/1024, f.kbs/1024, "KB/s")
		scaled(b, "web_page_loaded", n, benchfig.Ms(r.page.loaded), benchfig.Ms(f.page.loaded), "ms")
		scaled(b, "web_graph_draw", n, benchfig.Median(r.page.graph), benchfig.Median(f.page.graph), "ms")
		scaled(b, "web_render_median", n, benchfig.Median(r.page.render), benchfig.Median(f.page.render), "ms")
		scaled(b, "web_render_longest", n, maxOf(r.page.render), maxOf(f.page.render), "ms")
		scaled(b, "web_renders_per_s", n, r.page.renders, f.page.renders, "1/s")
		scaled(b, "web_longest_frame", n, r.page.longestFrame, f.page.longestFrame, "ms")
		benchfig.Figure(b, fmt.Sprintf("web_frames_over_50ms_n%d", n), float64(r.page.longFrames), "frames")
	}
	live := daemonState(b)
	for _, n := range []int{10, 100} {
		scaled(b, "web_daemon_state_bytes", n, live[n][0], live[10][0], "B")
		scaled(b, "web_daemon_state_time", n, live[n][1], live[10][1], "ms")
	}
}
