package webui

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sophonz/st/internal/web"
	"github.com/sophonz/st/internal/web/webtest"
)

const secret = "bench-webui-secret-0123456789abcdef"

// page is the web UI served as the daemon serves it, on 127.0.0.1, with
// a fake Backend of n agents.
type page struct {
	n    int
	fake *webtest.Backend
	base string // http://127.0.0.1:PORT
	tok  string // the link token for that port
}

func servePage(b *testing.B, n int) *page {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	p := &page{n: n, fake: webtest.New(webtest.Scale(time.Now(), n)), base: "http://" + ln.Addr().String()}
	p.tok = web.LinkToken(secret, ln.Addr().(*net.TCPAddr).Port)
	h := web.New(web.Config{Secret: secret, Backend: p.fake})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.Close(ctx)
		srv.Shutdown(ctx)
	})
	return p
}

// link is what st web would print.
func (p *page) link() string { return p.base + "/st/?token=" + p.tok }

// stateTimes fetches /st/api/state k times (after one to warm up) and
// returns the body's size and each fetch's time to its last byte.
func stateTimes(b *testing.B, url string, k int) (int, []time.Duration) {
	b.Helper()
	c := &http.Client{Timeout: 30 * time.Second}
	size := 0
	var ts []time.Duration
	for i := 0; i <= k; i++ {
		t0 := time.Now()
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d %v: %.200s", url, resp.StatusCode, err, body)
		}
		size = len(body)
		if i > 0 {
			ts = append(ts, d)
		}
	}
	return size, ts
}

// fetch is the body at url.
func fetch(b *testing.B, url string) string {
	b.Helper()
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// churn changes the states of the first k agents of p, each once a
// second on average (k changes a second in all, spread evenly), until
// stop is closed; it returns how many changes it made.
func (p *page) churn(k int, stop <-chan struct{}) *atomic.Int64 {
	var made atomic.Int64
	go func() {
		const tick = 20 * time.Millisecond
		t := time.NewTicker(tick)
		defer t.Stop()
		next, owed, start := 0, 0.0, time.Now()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			// What is owed by the clock, so that a late tick catches up.
			owed = float64(k)*time.Since(start).Seconds() - float64(made.Load())
			if owed < 1 {
				continue
			}
			now := time.Now()
			p.fake.Update(func(s *web.Snapshot) {
				for ; owed >= 1; owed-- {
					webtest.Step(s, next, now)
					next = (next + 1) % k
					made.Add(1)
				}
			})
		}
	}()
	return &made
}

// eventsFlow listens on /st/api/events while k agents change state for
// d, and returns the messages and bytes it got a second, and the changes
// made a second.
func eventsFlow(b *testing.B, p *page, k int, d time.Duration) (msgs, bytes, changes float64) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	u := strings.Replace(p.base, "http://", "ws://", 1) + "/st/api/events?token=" + p.tok
	c, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		b.Fatalf("dial %s: %v", u, err)
	}
	defer c.CloseNow()
	c.SetReadLimit(64 << 20)
	if _, _, err := c.Read(ctx); err != nil { // the first snapshot
		b.Fatal(err)
	}
	var n, size atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			n.Add(1)
			size.Add(int64(len(data)))
		}
	}()
	stop := make(chan struct{})
	t0 := time.Now()
	made := p.churn(k, stop)
	time.Sleep(d) // the window the flow is measured over, not a wait for a condition
	close(stop)
	el := time.Since(t0).Seconds()
	gotN, gotB, madeN := n.Load(), size.Load(), made.Load()
	c.Close(websocket.StatusNormalClosure, "")
	cancel()
	wg.Wait()
	if gotN == 0 {
		b.Fatalf("no event in %s while %d agents changed state %d times", d, k, madeN)
	}
	fmt.Printf("events at %d agents, %d of them changing: %d changes, %d messages, %.1f MB in %.1f s\n", p.n, k, madeN, gotN, float64(gotB)/1e6, el)
	return float64(gotN) / el, float64(gotB) / el, float64(madeN) / el
}
