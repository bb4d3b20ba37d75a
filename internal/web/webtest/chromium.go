package webtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromiumPath is where scripts/test installs Chromium.
const ChromiumPath = "/usr/bin/chromium"

// Chromium starts a headless Chromium of tb's only, with a window of
// w x h, and returns its context; it ends with tb, its profile and
// temporary folders removed. lang sets the browser's languages ("ko-KR",
// or a list in order, "fr-FR,ko-KR"): Chromium's --lang and
// --accept-lang, which navigator.language and navigator.languages then
// say; "" leaves Chromium's own (English here). It fails tb without
// Chromium.
func Chromium(tb testing.TB, w, h int, lang string) context.Context {
	tb.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		tb.Fatalf("chromium is not installed at %s: scripts/test installs chromium", ChromiumPath)
	}
	dir, err := os.MkdirTemp("", "st-chromium")
	if err != nil {
		tb.Fatal(err)
	}
	// Its profile, and its TMPDIR: with --disable-dev-shm-usage Chromium
	// keeps its shared memory in files there (org.chromium.Chromium.*),
	// which a browser ended by the test leaves behind; in /tmp, each test
	// left a few dozen.
	profile, tmp := filepath.Join(dir, "profile"), filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		tb.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(ChromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(profile),
		chromedp.Env("TMPDIR=" + tmp),
		chromedp.WindowSize(w, h),
	}
	if lang != "" {
		first, _, _ := strings.Cut(lang, ",")
		opts = append(opts, chromedp.Flag("lang", first), chromedp.Flag("accept-lang", lang))
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(tb.Logf))
	tb.Cleanup(func() {
		cancel()
		acancel()
		// Chromium's children can write in the folder for a moment after it stops.
		for range 50 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	// The first Run starts the browser, and it lives as long as ctx: no
	// timeout on this one.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		tb.Fatalf("start chromium: %v", err)
	}
	return ctx
}
