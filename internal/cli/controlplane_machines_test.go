package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sophonz/st/internal/remote"
)

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
