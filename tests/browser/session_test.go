package browser

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"

	"github.com/sophonz/st/internal/web"
	"github.com/sophonz/st/internal/web/webtest"
)

// restartableUI serves the UI on one port of 127.0.0.1 and can restart it
// there, as st restarts on its kept port: the same secret, a new start.
type restartableUI struct {
	t    *testing.T
	addr string
	h    *web.Server
	srv  *http.Server
	fake *webtest.Backend
}

func (u *restartableUI) start() {
	u.t.Helper()
	addr := u.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		u.t.Fatal(err)
	}
	u.addr = ln.Addr().String()
	u.h = web.New(web.Config{Secret: secret, Backend: u.fake})
	u.srv = &http.Server{Handler: u.h, ReadHeaderTimeout: 10 * time.Second}
	go u.srv.Serve(ln)
}

func (u *restartableUI) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u.h.Close(ctx) // the websockets, which Shutdown does not wait for
	u.srv.Shutdown(ctx)
}

// TestSessionAcrossReloadsTabsAndRestarts is what a person sees: st web's
// link opens the page; a reload keeps it working, and so does the same
// address typed into a second tab, with no token (the session is kept
// in the origin's localStorage, and the browser holds no cookie of st's).
// After st restarts, both pages say to open the link again; opening it in
// one tab brings both back.
func TestSessionAcrossReloadsTabsAndRestarts(t *testing.T) {
	u := &restartableUI{t: t, fake: webtest.New(webtest.Sample(time.Now()))}
	u.start()
	t.Cleanup(u.stop)
	base := "http://" + u.addr
	live := `document.querySelector("#conn").dataset.state === "live" && document.querySelector("#machine").innerText === "devbox"`
	refused := `document.querySelector("#conn").innerText === "token refused: open the URL st web prints"`

	ctx := newBrowser(t, 1280, 800)
	do(t, ctx, chromedp.Navigate(link(t, base)))
	waitJS(t, ctx, live, 20*time.Second)
	if loc := run(t, ctx, chromedp.Location()); strings.Contains(loc, "token") {
		t.Errorf("the address still shows the token: %s", loc)
	}
	var cookies storage.GetCookiesResult
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) (err error) {
		cookies, err = cdp.Call(ctx, tg, storage.GetCookies, storage.GetCookiesParams{})
		return err
	}))
	if len(cookies.Cookies) > 0 {
		t.Errorf("the browser holds cookies of st's (sent to every port of 127.0.0.1): %+v", cookies.Cookies[0])
	}

	// A reload, and a second tab of the address with no token.
	do(t, ctx, chromedp.Reload())
	waitJS(t, ctx, live, 20*time.Second)
	tab := newTab(t, ctx)
	do(t, tab, chromedp.Navigate(base+"/st/"))
	waitJS(t, tab, live, 20*time.Second)

	// st restarts on the same port: sessions die with it.
	u.stop()
	u.start()
	waitJS(t, ctx, refused, 30*time.Second)
	waitJS(t, tab, refused, 30*time.Second)
	if text := pageText(ctx); !strings.Contains(text, "token refused") {
		t.Errorf("the page after the restart says %q", text)
	}
	// The link again, in the second tab: both pages come back.
	do(t, tab, chromedp.Navigate(link(t, base)))
	waitJS(t, tab, live, 20*time.Second)
	waitJS(t, ctx, live, 20*time.Second)
}
