package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sophonz/st/internal/web/webtest"
)

// newBrowser starts a headless Chromium of this benchmark only, with a
// window of w x h (webtest.Chromium).
func newBrowser(b *testing.B, w, h int) context.Context {
	b.Helper()
	return webtest.Chromium(b, w, h, "")
}

func eval[T any](b *testing.B, ctx context.Context, expr string, opts ...chromedp.EvaluateOption) T {
	b.Helper()
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		b.Fatalf("%s: %v", expr, err)
	}
	return v
}

func waitJS(b *testing.B, ctx context.Context, expr string, d time.Duration) {
	b.Helper()
	c, cancel := context.WithTimeout(ctx, d+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(c, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		b.Fatalf("waiting %s for %s: %v", d, expr, err)
	}
}

// watchJS puts observers in the page: every measure of app.js's timed
// (st:render, st:graph) by name, the long animation frames (Chromium
// reports those over 50 ms, with the script and the rendering in them),
// and, while frames() runs, the time between one frame's start and the
// next's (requestAnimationFrame): the longest is the longest frame.
const watchJS = `(() => {
  const w = window.__bench = { measures: {}, loaf: [], gaps: [], on: false };
  new PerformanceObserver((l) => { for (const e of l.getEntries()) (w.measures[e.name] ||= []).push(e.duration); }).observe({ type: 'measure' });
  new PerformanceObserver((l) => { for (const e of l.getEntries()) w.loaf.push(e.duration); }).observe({ type: 'long-animation-frame' });
  w.frames = (on) => {
    w.on = on;
    if (!on) return;
    w.gaps = []; w.loaf = []; w.measures = {};
    let last = 0;
    const f = (t) => { if (last) w.gaps.push(t - last); last = t; if (w.on) requestAnimationFrame(f); };
    requestAnimationFrame(f);
  };
  return true;
})()`

// pageWatch is what watchJS gathered.
type pageWatch struct {
	Measures map[string][]float64 `json:"measures"`
	LoAF     []float64            `json:"loaf"`
	Gaps     []float64            `json:"gaps"`
}

func readWatch(b *testing.B, ctx context.Context) pageWatch {
	b.Helper()
	var w pageWatch
	s := eval[string](b, ctx, `JSON.stringify(window.__bench)`)
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		b.Fatal(err)
	}
	return w
}

// afterFrames waits for two of the page's frames: what a click drew is
// laid out and painted by then.
const afterFrames = `new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(() => ok(true))))`

// pageFigures are the browser's figures at one size.
type pageFigures struct {
	loaded       time.Duration // navigation to the whole state drawn
	graph        []float64     // the graph drawn when opened, ms each
	render       []float64     // every drawing of the page while agents change state, ms each
	renders      float64       // drawings a second then
	longestFrame float64       // ms between two frames' starts, at most
	longFrames   int           // long animation frames (over 50 ms)
	longestLoAF  float64
	changes      float64 // state changes a second
}

// browse opens p's page in ctx, opens the graph k times, and then watches
// the page for d while every agent changes state once a second.
func browse(b *testing.B, ctx context.Context, p *page, k int, d time.Duration) pageFigures {
	b.Helper()
	var f pageFigures
	t0 := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(p.link())); err != nil {
		b.Fatal(err)
	}
	waitJS(b, ctx, fmt.Sprintf(`document.querySelector("#agents-count").textContent === "%d" && document.querySelectorAll("#sidebar .card").length > 0`, p.n), 60*time.Second)
	eval[bool](b, ctx, afterFrames, chromedp.EvalAwaitPromise)
	f.loaded = time.Since(t0)
	eval[bool](b, ctx, watchJS)
	for i := 0; i < k; i++ {
		eval[bool](b, ctx, `document.querySelector("#agents-btn").click(), true`)
		eval[bool](b, ctx, afterFrames, chromedp.EvalAwaitPromise)
		eval[bool](b, ctx, `document.querySelector("#graph-close").click(), true`)
		eval[bool](b, ctx, afterFrames, chromedp.EvalAwaitPromise)
	}
	f.graph = readWatch(b, ctx).Measures["st:graph"]
	if len(f.graph) != k {
		b.Fatalf("the graph was drawn %d times for %d openings", len(f.graph), k)
	}
	// The graph open, every agent changing state.
	eval[bool](b, ctx, `document.querySelector("#agents-btn").click(), true`)
	eval[bool](b, ctx, afterFrames, chromedp.EvalAwaitPromise)
	if n := eval[int](b, ctx, `document.querySelectorAll("#graph-canvas .gcard.agent-card").length`); n != p.n {
		b.Fatalf("the graph has %d agent cards, want %d", n, p.n)
	}
	eval[bool](b, ctx, `window.__bench.frames(true), true`)
	stop := make(chan struct{})
	c0 := time.Now()
	made := p.churn(p.n, stop)
	time.Sleep(d) // the window the page is watched over, not a wait for a condition
	close(stop)
	eval[bool](b, ctx, afterFrames, chromedp.EvalAwaitPromise)
	eval[bool](b, ctx, `window.__bench.frames(false), true`)
	el := time.Since(c0).Seconds()
	w := readWatch(b, ctx)
	f.render = w.Measures["st:render"]
	f.renders = float64(len(f.render)) / el
	f.longestFrame = maxOf(w.Gaps)
	f.longFrames = len(w.LoAF)
	f.longestLoAF = maxOf(w.LoAF)
	f.changes = float64(made.Load()) / el
	return f
}
