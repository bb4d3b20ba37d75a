package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sophonz/st/internal/testutil"
)

// TestDemo runs scripts/demo (in a folder of its own) while another
// program holds the web UI's default port: the run finishes, and the
// address the demo prints is the web UI's real one, on another port,
// serving the page. scripts/demo stop then leaves nothing running.
func TestDemo(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldPort := held.Addr().(*net.TCPAddr).Port
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ST_") {
			env = append(env, kv)
		}
	}
	env = testutil.Env(env, "ST_DEMO_DIR="+filepath.Join(dir, "d"), "ST_WEB_DEFAULT_PORT="+strconv.Itoa(heldPort))
	demo := filepath.Join(testutil.ModuleRoot(), "scripts", "demo")
	stop := func() {
		cmd := exec.Command(demo, "stop")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("scripts/demo stop: %v\n%s", err, out)
		}
		if left := testutil.EndLeftovers(dir, 5*time.Second); len(left) > 0 {
			t.Errorf("scripts/demo stop left %d process(es) running (ended now): %s", len(left), strings.Join(left, "; "))
		}
	}
	defer stop()
	cmd := exec.Command(demo)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/demo: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^Or open: +(http://127\.0\.0\.1:(\d+)/st/\?token=[0-9a-f]+)$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("scripts/demo printed no web UI address:\n%s", out)
	}
	if string(m[2]) == strconv.Itoa(heldPort) {
		t.Fatalf("the demo's web UI is on the held port %d:\n%s", heldPort, out)
	}
	res, err := (&http.Client{Timeout: 10 * time.Second}).Get(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "<title>st</title>") {
		t.Errorf("GET %s: %s\n%.300s", m[1], res.Status, body)
	}
	for _, want := range []string{"api-tests", "readme", "changelog", "Watch it:"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("scripts/demo did not print %q:\n%s", want, out)
		}
	}
}
