// Package webui holds the web UI's scale benchmark (BenchmarkWebUI): the
// page and its state served for 10, 100 and 300 agents, each figure as a
// ratio to the same figure at 10 agents measured in the same run (the
// floor), since absolute times on a shared machine move 2-5x with its
// load. It prints FIGURE lines as package bench does (name, name_floor,
// name_ratio), which scripts/bench --web gathers into a table, and
// asserts nothing about timings.
//
// The agents are simulated through the web UI's Backend (webtest.Scale:
// runs of a coordinator and nine workers, teams, teammates, subagents and
// gates, as a busy machine has them), served by internal/web as the
// daemon serves it, on 127.0.0.1; the page runs in headless Chromium
// (/usr/bin/chromium, driven with chromedp), and the page's own
// performance marks (app.js: timed) give the time each drawing took. One
// part runs a real daemon with 10 and then 100 sim workers, for the size
// and time of its state.
package webui
