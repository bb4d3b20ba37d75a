package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sophonz/st/internal/controlplane"
	"github.com/sophonz/st/internal/controlplane/cpserver"
	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/remote"
	"github.com/sophonz/st/internal/testutil"
	"github.com/sophonz/st/internal/version"
)

// serveControlPlane runs st control-plane serve in-process until stop is
// called, and returns the URL it printed.
func serveControlPlane(t *testing.T, vars map[string]string, data string) (url string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errb := &testutil.SyncBuffer{}, &testutil.SyncBuffer{}
	env := Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: errb, Getenv: func(k string) string { return vars[k] },
		ControlPlane: controlplane.Service{NewMeter: func() cpconfig.Meter { return cpserver.NewMeter() }}} // as st-control-plane is
	done := make(chan error, 1)
	go func() {
		root := newRoot(&env)
		root.SetArgs([]string{"control-plane", "serve", "--data", data, "--listen", "127.0.0.1:0", "--offline-after", "30s"})
		root.SetOut(out)
		root.SetErr(errb)
		done <- root.ExecuteContext(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("control-plane serve: %v\nstderr:\n%s", err, errb.String())
			}
		})
	}
	t.Cleanup(stop)
	first := regexp.MustCompile(`\Acontrol plane listening on (https://127\.0\.0\.1:\d+)\n`)
	testutil.WaitFor(t, 10*time.Second, func() (bool, string) {
		select {
		case err := <-done:
			t.Fatalf("control-plane serve ended: %v\nstderr:\n%s", err, errb.String())
		default:
		}
		m := first.FindStringSubmatch(out.String())
		if m == nil {
			return false, "no URL printed; stdout:\n" + out.String()
		}
		url = m[1]
		return true, ""
	})
	if b, err := os.ReadFile(filepath.Join(data, "url")); err != nil || strings.TrimSpace(string(b)) != url {
		t.Errorf("%s/url = %q, %v; printed %s", data, b, err, url)
	}
	return url, stop
}

// remoteTest runs st as machines of one account, each with an ST_HOME of
// its own in dir.
type remoteTest struct {
	t    *testing.T
	dir  string
	base map[string]string
}

// machine is the environment of a machine named name, with more variables
// in set (key, value, ...).
func (r *remoteTest) machine(name string, set ...string) map[string]string {
	v := map[string]string{}
	for k, x := range r.base {
		v[k] = x
	}
	v["ST_HOME"] = filepath.Join(r.dir, name)
	for i := 0; i+1 < len(set); i += 2 {
		v[set[i]] = set[i+1]
	}
	return v
}

// expect runs st with args and checks its exit status, that stdout
// matches each of wantOut and that stderr has each of wantErr.
func (r *remoteTest) expect(vars map[string]string, args []string, wantCode int, wantOut, wantErr []string) string {
	t := r.t
	t.Helper()
	code, out, errs := runST(t, vars, args...)
	if code != wantCode {
		t.Fatalf("st %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, out, errs)
	}
	for _, w := range wantOut {
		if !regexp.MustCompile(w).MatchString(out) {
			t.Errorf("st %s: stdout does not match %q:\n%s", strings.Join(args, " "), w, out)
		}
	}
	for _, w := range wantErr {
		if !strings.Contains(errs, w) {
			t.Errorf("st %s: no %q in stderr:\n%s", strings.Join(args, " "), w, errs)
		}
	}
	return out
}

var notSignedIn = []string{"this machine is not signed in\nTry: st login --control-plane URL --account NAME --key KEY"}

func TestRemoteCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := &remoteTest{t: t, dir: dir, base: map[string]string{"HOME": dir, "PATH": "/usr/bin:/bin"}}
	data := filepath.Join(dir, "cp")
	url, stop := serveControlPlane(t, r.base, data)
	out := r.expect(r.base, []string{"control-plane", "account", "add", "acme", "--data", data}, 0,
		[]string{`(?m)^added account acme$`, `(?m)^key: stk_\S+$`, `shown only this once`}, nil)
	key := regexp.MustCompile(`(?m)^key: (\S+)$`).FindStringSubmatch(out)[1]

	mac := r.machine("mac", "ST_CONTROL_PLANE", url, "ST_CONTROL_PLANE_CA", filepath.Join(data, "ca.pem"),
		"ST_ACCOUNT", "acme", "ST_ACCOUNT_KEY", key, "ST_HOSTNAME", "ci-mac.local")
	r.expect(mac, []string{"machines"}, 1, nil, notSignedIn)
	laptop := r.signIn(mac, url, data, key)
	r.listMachines(mac, laptop)

	r.expect(laptop, []string{"logout"}, 0, []string{`^signed out of account acme \(this machine was home-laptop\)\n$`}, nil)
	r.expect(laptop, []string{"logout"}, 0, []string{`^this machine is not signed in\n$`}, nil)
	r.expect(laptop, []string{"machines"}, 1, nil, notSignedIn)
	out = r.expect(mac, []string{"machines"}, 0, []string{`ci-mac`}, nil)
	if strings.Contains(out, "home-laptop") {
		t.Errorf("a signed-out machine is listed:\n%s", out)
	}

	// With the control plane gone: login says where it could not reach and
	// what to do; logout signs out here and says the control plane was not told.
	stop()
	r.expect(r.machine("late"), []string{"login", "--control-plane", url, "--account", "acme", "--key", key, "--host", "late"}, 1, nil,
		[]string{"cannot reach the control plane at " + url + ": dial tcp", "connection refused", "Try: check that st control-plane serve runs there and that the URL is right"})
	r.expect(mac, []string{"machines"}, 1, nil, []string{"cannot reach the control plane at " + url})
	r.expect(mac, []string{"logout"}, 0, []string{`^signed out of account acme \(this machine was ci-mac\)\n$`},
		[]string{"signed out on this machine, but could not tell the control plane at " + url})
	r.expect(mac, []string{"machines"}, 1, nil, notSignedIn)
}

// signIn signs mac in from its environment and a laptop from flags, and
// refuses a wrong key; it returns the laptop's environment.
func (r *remoteTest) signIn(mac map[string]string, url, data, key string) (laptop map[string]string) {
	// The environment gives everything but the name.
	r.expect(mac, []string{"login", "--name", "CI Mac"}, 0,
		[]string{`^signed in to account acme as CI Mac \(slug ci-mac\) until \d\d:\d\d\n`, `st orch accept-remote on`}, nil)
	// Flags alone, and the name from the host name.
	laptop = r.machine("laptop")
	r.expect(laptop, []string{"login", "--control-plane", url, "--ca", filepath.Join(data, "ca.pem"), "--account", "acme", "--key", key, "--host", "home-laptop"}, 0,
		[]string{`^signed in to account acme as home-laptop \(slug home-laptop\) until`}, nil)
	r.expect(r.machine("x"), []string{"login", "--control-plane", url, "--ca", filepath.Join(data, "ca.pem"), "--account", "acme", "--key", "stk_nope", "--host", "x"}, 1, nil,
		[]string{"account acme does not take this key", "Try: use the key that st control-plane account add acme printed"})
	return laptop
}

// listMachines has the laptop say where it listens, then lists the
// account's machines from both.
func (r *remoteTest) listMachines(mac, laptop map[string]string) {
	t := r.t
	id, err := remote.LoadIdentity(laptop["ST_HOME"])
	if err != nil {
		t.Fatal(err)
	}
	if err := id.Heartbeat(context.Background(), "127.0.0.1:4567", true, true); err != nil {
		t.Fatal(err)
	}
	id.CloseIdleConnections()
	r.expect(mac, []string{"machines"}, 0, []string{
		`(?m)^  NAME\s+HOST\s+SLUG\s+STATUS\s+WORKERS\s+REACHED$`,
		`(?m)^\* CI Mac\s+ci-mac\.local\s+ci-mac\s+offline\s+no\s+this machine$`,
		// No st runs here to say how it reaches the laptop.
		`(?m)^  home-laptop\s+home-laptop\s+home-laptop\s+online\s+takes workers\s+\?$`,
		`(?m)^account acme; \* is this machine; reached: directly, or relayed through the control plane$`,
		`(?m)^\(\? : st is not running here to say how it reaches them; st up\)$`,
	}, nil)
	out := r.expect(laptop, []string{"machines", "--json"}, 0, nil, nil)
	var mj machinesJSON
	if err := json.Unmarshal([]byte(out), &mj); err != nil {
		t.Fatalf("machines --json: %v\n%s", err, out)
	}
	if mj.Account != "acme" || mj.This != "home-laptop" || len(mj.Machines) != 2 || mj.Machines[1].Addr != "127.0.0.1:4567" || !mj.Machines[1].Online {
		t.Errorf("machines --json: %s", out)
	}
}

// TestControlPlaneMachinesAndReplace: st control-plane machines lists an
// account's machines from the control plane's folder, with last seen,
// address kind and version; a sign-in under a machine's name and host
// with another key is refused unless --replace, which every machine's
// st machines then shows.
func TestControlPlaneMachinesAndReplace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := &remoteTest{t: t, dir: dir, base: map[string]string{"HOME": dir, "PATH": "/usr/bin:/bin"}}
	data := filepath.Join(dir, "cp")
	url, _ := serveControlPlane(t, r.base, data)
	out := r.expect(r.base, []string{"control-plane", "account", "add", "acme", "--data", data}, 0, nil, nil)
	key := regexp.MustCompile(`(?m)^key: (\S+)$`).FindStringSubmatch(out)[1]
	env := func(name string) map[string]string {
		return r.machine(name, "ST_CONTROL_PLANE", url, "ST_CONTROL_PLANE_CA", filepath.Join(data, "ca.pem"),
			"ST_ACCOUNT", "acme", "ST_ACCOUNT_KEY", key, "ST_HOSTNAME", name+".local")
	}
	mac, laptop, box := env("mac"), env("laptop"), env("box")
	for _, m := range []map[string]string{mac, laptop, box} {
		r.expect(m, []string{"login", "--name", filepath.Base(m["ST_HOME"])}, 0, nil, nil)
	}
	beat := func(home, addr string) {
		id, err := remote.LoadIdentity(home)
		if err != nil {
			t.Fatal(err)
		}
		defer id.CloseIdleConnections()
		if err := id.Heartbeat(context.Background(), addr, true, true); err != nil {
			t.Fatal(err)
		}
	}
	beat(laptop["ST_HOME"], "127.0.0.1:4567")
	beat(box["ST_HOME"], "")
	r.expect(r.base, []string{"control-plane", "machines", "--account", "acme", "--data", data}, 0, []string{
		`(?m)^NAME\s+HOST\s+SLUG\s+STATUS\s+LAST SEEN\s+ADDRESS\s+VERSION\s+WORKERS$`,
		`(?m)^box\s+box\.local\s+box\s+online\s+\d+s ago\s+relay-only\s+\S+\s+takes workers$`,
		`(?m)^laptop\s+laptop\.local\s+laptop\s+online\s+\d+s ago\s+direct\s+\S+\s+takes workers$`,
		`(?m)^mac\s+mac\.local\s+mac\s+offline\s+never\s+-\s+-\s+no$`,
		`(?m)^account acme: 3 machines$`,
	}, nil)
	out = r.expect(r.base, []string{"control-plane", "machines", "--account", "acme", "--data", data, "--json"}, 0, nil, nil)
	var cj cpMachinesJSON
	if err := json.Unmarshal([]byte(out), &cj); err != nil || len(cj.Machines) != 3 || cj.Machines[1].AddrKind != "direct" ||
		cj.Machines[0].AddrKind != "relay-only" || cj.Machines[1].Version == "" || strings.Contains(out, "CERTIFICATE") {
		t.Errorf("control-plane machines --json: %v\n%s", err, out)
	}
	r.expect(r.base, []string{"control-plane", "machines", "--data", data}, 1, nil, []string{"st control-plane machines --account NAME"})
	r.expect(r.base, []string{"control-plane", "machines", "--account", "nope", "--data", data}, 1, nil,
		[]string{"there is no account nope in " + data, "Try: st control-plane account add nope"})

	// Another ST_HOME (another key) as laptop on laptop.local: refused.
	impostor := env("impostor")
	impostor["ST_HOSTNAME"] = "laptop.local"
	r.expect(impostor, []string{"login", "--name", "laptop"}, 1, nil,
		[]string{"machine laptop (host laptop.local, slug laptop) of account acme is signed in with another key (online, last seen", "st login --replace"})
	r.expect(impostor, []string{"login", "--name", "laptop", "--replace"}, 0, []string{
		`(?m)^signed in to account acme as laptop \(slug laptop\)`,
		`(?m)^took the name over from key [0-9a-f]{12}, which is revoked now; the account's other machines show laptop as replaced$`}, nil)
	note := `(?m)^! laptop was taken over by a new sign-in with st login --replace at \d{4}-\d\d-\d\d \d\d:\d\d; the key it had before is revoked`
	r.expect(mac, []string{"machines"}, 0, []string{`(?m)^! laptop\s+laptop\.local\s+laptop\s+offline`, note}, nil)
	r.expect(r.base, []string{"control-plane", "machines", "--account", "acme", "--data", data}, 0, []string{note}, nil)
	// The real laptop is refused now, and told why.
	id, err := remote.LoadIdentity(laptop["ST_HOME"])
	if err != nil {
		t.Fatal(err)
	}
	defer id.CloseIdleConnections()
	if err := id.Heartbeat(context.Background(), "127.0.0.1:4567", true, true); err == nil || !strings.Contains(err.Error(), "was taken over by a sign-in with --replace") {
		t.Errorf("the replaced laptop's heartbeat: %v", err)
	}
}

// TestControlPlaneOfAnotherBuild: st-control-plane run by an st of
// another build (ST_CONTROL_PLANE_CALLER, which st sets as it runs it)
// says so on stderr, and still does its work; run by the same build, or
// by hand, it says nothing of it.
func TestControlPlaneOfAnotherBuild(t *testing.T) {
	for _, tc := range []struct {
		name, caller string
		warns        bool
	}{
		{"another build", "0.0.9 (commit 0123456789ab, 2026-01-01)", true},
		{"the same build", version.Full(), false},
		{"run by hand", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			data := filepath.Join(t.TempDir(), "cp")
			code := Main([]string{"control-plane", "account", "add", "acme", "--data", data}, Env{
				Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
				Getenv:       func(k string) string { return map[string]string{callerBuildVar: tc.caller}[k] },
				ControlPlane: controlplane.Service{},
			})
			if code != 0 || !strings.Contains(out.String(), "st login --control-plane") {
				t.Fatalf("account add: exit %d\n%s%s", code, &out, &errb)
			}
			warned := strings.Contains(errb.String(), "st "+tc.caller+" ran st-control-plane "+version.Full()+", another build") &&
				strings.Contains(errb.String(), "Try: install both from one checkout")
			if warned != tc.warns || (!tc.warns && errb.Len() > 0) {
				t.Errorf("stderr (a warning wanted: %v):\n%s", tc.warns, &errb)
			}
		})
	}
}
