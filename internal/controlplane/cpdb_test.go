package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/remote"
	"github.com/sophonz/st/internal/store"
)

// TestStateInSQLite: accounts and machines live in state.db; each
// account CA's key in a file of its own (0600), never in the database
// that the rest of the code reads.
func TestStateInSQLite(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	key := addAccount(t, data, "acme")
	login(t, cp, "acme", key, "mac", "mac")
	cp.Close()

	fi, err := os.Stat(filepath.Join(data, "ca-keys", "acme.pem"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the CA key's file: %v %v", fi, err)
	}
	keyPEM, _ := os.ReadFile(filepath.Join(data, "ca-keys", "acme.pem"))
	if !bytes.Contains(keyPEM, []byte("PRIVATE KEY")) {
		t.Errorf("ca-keys/acme.pem holds no key")
	}
	// Nothing of the database's files holds a private key.
	files, _ := filepath.Glob(filepath.Join(data, "state.db*"))
	if len(files) == 0 {
		t.Fatal("no state.db")
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte("PRIVATE KEY")) || bytes.Contains(b, keyPEM[40:80]) {
			t.Errorf("%s holds a private key", filepath.Base(f))
		}
		if fi, _ := os.Stat(f); fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is open to others: %v", filepath.Base(f), fi.Mode())
		}
	}
	if _, err := os.Stat(filepath.Join(data, "state.json")); !os.IsNotExist(err) {
		t.Errorf("a state.json was written: %v", err)
	}
	// The schema is the last migration's.
	d, err := openCPDB(data, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	var v int
	if err := d.db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v != len(migrations)-1 {
		t.Errorf("user_version %d, %v; want %d", v, err, len(migrations)-1)
	}
	var mode string
	if err := d.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q, %v", mode, err)
	}
}

// TestImportStateJSON: the state.json of an st before the database is
// imported on the first start and kept aside, renamed; machines whose
// key appears twice (one that signed in again under a new name, before a
// name followed its key) become one machine and its old name.
func TestImportStateJSON(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	accountKey, deskKey := writeOldState(t, data)
	var log strings.Builder
	cp, err := StartControlPlane(cpconfig.ServerOptions{Data: data, Log: &log}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Close() })
	if !strings.Contains(log.String(), "imported 1 accounts and 3 machines from "+filepath.Join(data, "state.json")) {
		t.Errorf("the log does not say what it imported:\n%s", log.String())
	}
	kept, _ := filepath.Glob(filepath.Join(data, "state.json.imported-*"))
	if _, err := os.Stat(filepath.Join(data, "state.json")); !os.IsNotExist(err) || len(kept) != 1 {
		t.Fatalf("state.json not kept aside: %v %v", kept, err)
	}
	if b, _ := os.ReadFile(kept[0]); !bytes.Contains(b, []byte(hashKey(accountKey))) {
		t.Errorf("the kept file is not the old state")
	}
	// The old account key signs a new machine in; the imported ones are
	// listed, the duplicate under its newer name only.
	id := login(t, cp, "acme", accountKey, "gpu", "gpu")
	ms, err := id.Machines(context.Background())
	if err != nil || slugs(ms) != "desk,gpu,work-laptop" {
		t.Fatalf("machines after the import: %s %v", slugs(ms), err)
	}
	if wl := ms[2]; wl.Addr != "127.0.0.1:7443" || len(wl.Formerly) != 1 || wl.Formerly[0] != "laptop" {
		t.Errorf("work-laptop after the import: %+v", wl)
	}
	if _, err := RemoveMachine(data, "acme", "laptop"); err == nil || !strings.Contains(err.Error(), "old name of machine work-laptop") {
		t.Errorf("removing the imported old name: %v", err)
	}
	if _, err := RemoveMachine(data, "acme", "desk"); err != nil {
		t.Fatal(err)
	}
	hb := remote.HeartbeatResponse{}
	if err := remote.CallJSON(context.Background(), id.CPClient(), id.ControlPlane, "POST", "/v1/heartbeat", remote.HeartbeatRequest{}, &hb); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range hb.Revoked {
		got = append(got, r.Slug+"="+r.Key)
	}
	if want := fmt.Sprintf("old=abcd,desk=%s", deskKey); strings.Join(got, ",") != want {
		t.Errorf("revoked after the import and a removal: %v, want %s", got, want)
	}
	// A second start imports nothing more.
	cp.Close()
	log.Reset()
	cp2 := startCP(t, cpconfig.ServerOptions{Data: data, Log: &log}, "")
	cp2.Close()
	if strings.Contains(log.String(), "imported") {
		t.Errorf("imported again: %s", log.String())
	}
}

// writeOldState writes in data what an st before the database left: its
// CA, and a state.json as it wrote it (the CA key among the rest), with
// laptop signed in again as work-laptop (the same key twice), desk, and a
// revoked key. It returns the account key and desk's key id.
func writeOldState(t *testing.T, data string) (accountKey, deskKey string) {
	t.Helper()
	if _, _, err := loadOrMakeCA(&cpDB{dir: data}); err != nil {
		t.Fatal(err)
	}
	caPEM, caKeyPEM, err := newCA("st account acme", remote.AccountURI("acme"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := remote.DecodeCert(caPEM)
	caKey, _ := remote.DecodeKey(caKeyPEM)
	machineCert := func(slug string) (string, string) {
		k, _ := remote.NewKey()
		c, err := signMachine(ca, caKey, k.Public(), "acme", slug, time.Now(), remote.CertLifetime)
		if err != nil {
			t.Fatal(err)
		}
		return string(c), remote.KeyID(k.Public())
	}
	laptopCert, _ := machineCert("laptop")
	deskCert, deskKey := machineCert("desk")
	accountKey = "stk_old-key"
	old := map[string]any{"accounts": map[string]any{"acme": map[string]any{
		"name": "acme", "key_hash": hashKey(accountKey), "ca_cert": string(caPEM), "ca_key": string(caKeyPEM),
		"created": time.Now().Add(-time.Hour).UTC(),
		"machines": map[string]any{
			"laptop":      map[string]any{"slug": "laptop", "name": "laptop", "host": "laptop", "cert": laptopCert, "last_seen": time.Now().Add(-time.Hour).UTC()},
			"work-laptop": map[string]any{"slug": "work-laptop", "name": "work-laptop", "host": "laptop", "cert": laptopCert, "online": true, "addr": "127.0.0.1:7443", "last_seen": time.Now().UTC()},
			"desk":        map[string]any{"slug": "desk", "name": "desk", "host": "desk", "cert": deskCert},
		},
		"revoked": []map[string]any{{"slug": "old", "key": "abcd", "until": time.Now().Add(time.Hour).UTC()}},
	}}}
	if err := store.WriteJSON(filepath.Join(data, "state.json"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	return accountKey, deskKey
}

// TestImportRefusesACorruptStateJSON: a state.json that does not decode
// stops the control plane with what to do, and is left as it is.
func TestImportRefusesACorruptStateJSON(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "state.json"), []byte(`{"accounts": {`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := StartControlPlane(cpconfig.ServerOptions{Data: data}, "127.0.0.1:0")
	if err == nil || !strings.Contains(err.Error(), "cannot import its old state") || !strings.Contains(err.Error(), "Try: restore") {
		t.Errorf("a corrupt state.json: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(data, "state.json")); string(b) != `{"accounts": {` {
		t.Errorf("the corrupt state.json was changed: %q", b)
	}
}

// TestHeartbeatTouchesOnlyMemory: a heartbeat that changes nothing but
// the time writes nothing; the list shows the time at once, and the
// database has it after the next flush (here: at Close).
func TestHeartbeatTouchesOnlyMemory(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	key := addAccount(t, data, "acme")
	mac := login(t, cp, "acme", key, "mac", "mac")
	ctx := context.Background()
	onDisk := func() (lastSeen time.Time, addr string) {
		t.Helper()
		m, err := cp.db.machine(cp.db.db, "acme", "mac")
		if err != nil || m == nil {
			t.Fatalf("machine: %v", err)
		}
		return m.LastSeen, m.Addr
	}
	if err := mac.Heartbeat(ctx, "127.0.0.1:1111", true, true); err != nil {
		t.Fatal(err)
	}
	first, addr := onDisk()
	if first.IsZero() || addr != "127.0.0.1:1111" {
		t.Fatalf("the first heartbeat (online, an address) was not written: %s %q", first, addr)
	}
	var later time.Time
	for later = first; !later.After(first); {
		if err := mac.Heartbeat(ctx, "127.0.0.1:1111", true, true); err != nil {
			t.Fatal(err)
		}
		ms, _ := mac.Machines(ctx)
		later = ms[0].LastSeen
	}
	if seen, _ := onDisk(); !seen.Equal(first) {
		t.Errorf("a heartbeat that changed nothing wrote last_seen: %s, was %s", seen, first)
	}
	// Something that shows changes: written at once.
	if err := mac.Heartbeat(ctx, "127.0.0.1:2222", true, true); err != nil {
		t.Fatal(err)
	}
	if _, addr := onDisk(); addr != "127.0.0.1:2222" {
		t.Errorf("a new address was not written: %q", addr)
	}
	if err := mac.Heartbeat(ctx, "127.0.0.1:2222", true, true); err != nil {
		t.Fatal(err)
	}
	ms, _ := mac.Machines(ctx)
	mem := ms[0].LastSeen
	cp.Close()
	d, err := openCPDB(data, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	m, _ := d.machine(d.db, "acme", "mac")
	if !m.LastSeen.Equal(mem) {
		t.Errorf("after Close the database has last_seen %s, memory had %s", m.LastSeen, mem)
	}
}

// TestAccountAddWhileServing: st control-plane account add (its own
// connection to the database, as another process has) works while the
// control plane writes, through SQLite's locking.
func TestAccountAddWhileServing(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	key := addAccount(t, data, "acme")
	var ids []*remote.Identity
	for i := 0; i < 4; i++ {
		ids = append(ids, login(t, cp, "acme", key, fmt.Sprintf("m%d", i), "h"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				// A new address each time: each is a write.
				if err := id.Heartbeat(ctx, fmt.Sprintf("127.0.0.1:%d", 1000+i%50000), i%2 == 0, true); err != nil && ctx.Err() == nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < 20; i++ {
		if _, err := AddAccount(data, fmt.Sprintf("team-%d", i)); err != nil {
			t.Errorf("account add while serving: %v", err)
		}
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a heartbeat while accounts were added: %v", err)
	}
	d, err := openCPDB(data, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	var n int
	d.db.QueryRow(`SELECT count(*) FROM accounts`).Scan(&n)
	if n != 21 {
		t.Errorf("%d accounts, want 21", n)
	}
}

// TestMachinesJSONHasNoSecrets: what the control plane answers a machine
// holds no account key, no CA key, no hash of the key.
func TestMachinesJSONHasNoSecrets(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cp := startCP(t, cpconfig.ServerOptions{Data: data}, "")
	key := addAccount(t, data, "acme")
	mac := login(t, cp, "acme", key, "mac", "mac")
	var raw json.RawMessage
	if err := remote.CallJSON(context.Background(), mac.CPClient(), mac.ControlPlane, "GET", "/v1/machines", nil, &raw); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{key, hashKey(key), "PRIVATE KEY"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the machines' list holds %q", secret)
		}
	}
}
