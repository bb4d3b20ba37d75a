package controlplane

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/privdir"
	"github.com/sophonz/st/internal/remote"
	"github.com/sophonz/st/internal/store"
)

// The control plane keeps everything in one folder:
//
//	ca.pem, ca.key     its own CA, which signs its server certificate;
//	                   machines trust it with st login --ca DIR/ca.pem
//	state.db           accounts, machines and revoked keys (SQLite, WAL:
//	                   state.db-wal and state.db-shm beside it)
//	ca-keys/NAME.pem   each account CA's private key, mode 0600, in a file
//	                   of its own: no query of the database can return it
//	url                the URL serve listens on
//	state.json.imported-TIME
//	                   the state.json of an st before 0.4, imported on the
//	                   first start and kept (it holds CA keys: keep it as
//	                   safe as the folder, or remove it yourself)
//
// Every process reads and writes the database itself (serve, account add,
// machine remove, machines), so an account added while serve runs is
// there at once; SQLite's own locking and a busy timeout keep them in
// line, and one writer at a time in a process.
//
// A heartbeat that changes nothing but the time a machine was last seen
// touches only memory (cpSeen); those times reach the database every
// seenFlush. A crash loses at most that much of them: the machines look
// seen up to seenFlush earlier than they were, until their next heartbeat.

// The database's files.
const (
	dbFileName    = "state.db"
	jsonStateName = "state.json"
	caKeysDirName = "ca-keys"
)

// dbBusyTimeout is how long a write waits for another process's.
const dbBusyTimeout = 10 * time.Second

// migrations are the schema, step by step: migration i takes a database
// at user_version i-1 to i. Never edit one that shipped; add the next.
var migrations = []string{
	1: `
CREATE TABLE accounts (
	name     TEXT PRIMARY KEY,
	key_hash TEXT NOT NULL,    -- SHA-256 of the account key, hex
	ca_cert  TEXT NOT NULL,    -- PEM; its key is in ca-keys/NAME.pem
	created  INTEGER NOT NULL  -- unix ns
);
CREATE TABLE machines (
	account       TEXT NOT NULL REFERENCES accounts(name),
	slug          TEXT NOT NULL,
	name          TEXT NOT NULL,
	host          TEXT NOT NULL,
	key_id        TEXT NOT NULL,            -- keyID of its public key
	cert          TEXT NOT NULL,            -- its current certificate, PEM
	not_after     INTEGER NOT NULL,         -- when cert ends, unix ns
	addr          TEXT NOT NULL DEFAULT '', -- its peer listener, '' for none
	accept_remote INTEGER NOT NULL DEFAULT 0,
	online        INTEGER NOT NULL DEFAULT 0, -- what its last heartbeat said
	last_seen     INTEGER NOT NULL DEFAULT 0,
	version       TEXT NOT NULL DEFAULT '',   -- its st's, from its heartbeat
	signed_in     INTEGER NOT NULL DEFAULT 0,
	replaced      INTEGER NOT NULL DEFAULT 0, -- when st login --replace took it over
	-- Set: this slug is the old name of a machine that signed in again
	-- under a new one with the same key; kept (hidden) until not_after,
	-- so that the name is not given to another key meanwhile.
	renamed_to    TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (account, slug)
);
CREATE INDEX machines_by_key ON machines(account, key_id);
CREATE TABLE revoked (
	account TEXT NOT NULL,
	key_id  TEXT NOT NULL,
	slug    TEXT NOT NULL,
	until   INTEGER NOT NULL, -- when its last certificate ends, unix ns
	PRIMARY KEY (account, key_id)
);
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);`,
}

// cpDB is the control plane's folder and database.
type cpDB struct {
	dir string
	db  *sql.DB
	wmu sync.Mutex // one write transaction at a time in this process
}

// cpFolder names the control plane's folder in privdir's refusals.
var cpFolder = privdir.Folder{Name: "the control plane's folder (--data)", Elsewhere: "give --data a folder of your own"}

// openCPDB opens (making it when new) the database in dir, brings its
// schema up to date, and imports a state.json an older st left there.
// log gets a line for an import.
func openCPDB(dir string, log io.Writer) (*cpDB, error) {
	// The driver is linked by internal/controlplane/cpserver, which the st
	// binary leaves out (its doc says why).
	if !slices.Contains(sql.Drivers(), "sqlite") {
		return nil, &remote.Error{Message: "this program does not carry the control plane's database (SQLite)",
			Hint: "run st-control-plane (st control-plane runs it when it is beside st or on PATH)"}
	}
	// It holds the account CAs' keys: whoever could swap them could
	// intercept every machine that trusts them. Checked before it is made
	// and again after (another user could have put a folder there between).
	if err := privdir.Check(dir, cpFolder); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("make the control plane's folder %s: %w", dir, err)
	}
	if err := privdir.Check(dir, cpFolder); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, dbFileName)
	if strings.ContainsAny(path, "?#") {
		return nil, &remote.Error{Message: fmt.Sprintf("the control plane's folder %q has ? or # in its path, which SQLite reads as options", dir),
			Hint: "give --data a folder without them"}
	}
	// The file is made 0600 (SQLite makes it with the process's umask).
	if f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	} else {
		f.Close()
	}
	dsn := path + "?_busy_timeout=" + fmt.Sprint(dbBusyTimeout.Milliseconds()) +
		"&_journal_mode=WAL&_synchronous=FULL&_fk=1&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// Readers run side by side in WAL; each connection has its own cache.
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	d := &cpDB{dir: dir, db: db}
	if err := d.migrate(); err != nil {
		db.Close()
		return nil, err
	}
	if err := d.importJSON(log); err != nil {
		db.Close()
		return nil, err
	}
	return d, nil
}

func (d *cpDB) close() error { return d.db.Close() }

func (d *cpDB) path(name string) string { return filepath.Join(d.dir, name) }

// migrate runs the migrations the database has not had, each in its own
// transaction (another process may run them at the same moment: the
// version is read again inside).
func (d *cpDB) migrate() error {
	for {
		done := false
		err := d.write(func(tx *sql.Tx) error {
			var v int
			if err := tx.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
				return err
			}
			if v >= len(migrations)-1 {
				if v > len(migrations)-1 {
					return &remote.Error{Message: fmt.Sprintf("%s is of a newer st (schema %d; this st knows %d)", d.path(dbFileName), v, len(migrations)-1),
						Hint: "run the control plane with the st that made it, or a newer one"}
				}
				done = true
				return nil
			}
			if _, err := tx.Exec(migrations[v+1]); err != nil {
				return fmt.Errorf("schema migration %d: %w", v+1, err)
			}
			_, err := tx.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, v+1))
			return err
		})
		if err != nil {
			return fmt.Errorf("bring %s up to date: %w", d.path(dbFileName), err)
		}
		if done {
			return nil
		}
	}
}

// write runs f in a write transaction (BEGIN IMMEDIATE: it waits for
// other writers up to the busy timeout) and commits it when f returns no
// error.
func (d *cpDB) write(f func(*sql.Tx) error) error {
	d.wmu.Lock() // lockio: the database's write lock: one write at a time, through what it keeps beside the database (a CA's key) too
	defer d.wmu.Unlock()
	tx, err := d.db.BeginTx(context.Background(), nil)
	if err != nil {
		return fmt.Errorf("the control plane's database: %w", err)
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("the control plane's database: commit: %w", err)
	}
	return nil
}

// ns and fromNS keep times as unix nanoseconds; 0 is the zero time.
func ns(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNS(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// cpAccount is an account as the database keeps it. Its CA's key is not
// here: caKeyPath.
type cpAccount struct {
	Name    string
	KeyHash string
	CACert  string
	Created time.Time
}

// cpMachine is a machine as the database keeps it.
type cpMachine struct {
	Account, Slug, Name, Host string
	KeyID                     string
	Cert                      string
	NotAfter                  time.Time
	Addr                      string
	AcceptRemote, Online      bool
	LastSeen                  time.Time
	Version                   string
	SignedIn                  time.Time
	Replaced                  time.Time
	RenamedTo                 string
}

// caKeyPath is the file of account's CA key.
func (d *cpDB) caKeyPath(account string) string {
	return filepath.Join(d.dir, caKeysDirName, account+".pem")
}

// account reads account name; nil when there is none.
func (d *cpDB) account(q querier, name string) (*cpAccount, error) {
	a := &cpAccount{Name: name}
	var created int64
	err := q.QueryRow(`SELECT key_hash, ca_cert, created FROM accounts WHERE name = ?`, name).Scan(&a.KeyHash, &a.CACert, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read account %s: %w", name, err)
	}
	a.Created = fromNS(created)
	return a, nil
}

// accountCA is account's CA and its key, read from its own file.
func (d *cpDB) accountCA(a *cpAccount) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	ca, err := remote.DecodeCert([]byte(a.CACert))
	if err != nil {
		return nil, nil, fmt.Errorf("the CA of account %s: %w", a.Name, err)
	}
	keyPEM, err := os.ReadFile(d.caKeyPath(a.Name))
	if err != nil {
		return nil, nil, &remote.Error{Message: "read the CA key of account " + a.Name, Err: err,
			Hint: "restore " + d.caKeyPath(a.Name) + " from a backup of the control plane's folder"}
	}
	key, err := remote.DecodeKey(keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("the CA key of account %s in %s: %w", a.Name, d.caKeyPath(a.Name), err)
	}
	return ca, key, nil
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryRow(query string, args ...any) *sql.Row
	Query(query string, args ...any) (*sql.Rows, error)
}

const machineCols = `account, slug, name, host, key_id, cert, not_after, addr, accept_remote, online, last_seen, version, signed_in, replaced, renamed_to`

type scanner interface{ Scan(dest ...any) error }

func scanMachine(s scanner) (*cpMachine, error) {
	m := &cpMachine{}
	var notAfter, lastSeen, signedIn, replaced int64
	if err := s.Scan(&m.Account, &m.Slug, &m.Name, &m.Host, &m.KeyID, &m.Cert, &notAfter, &m.Addr, &m.AcceptRemote, &m.Online,
		&lastSeen, &m.Version, &signedIn, &replaced, &m.RenamedTo); err != nil {
		return nil, err
	}
	m.NotAfter, m.LastSeen, m.SignedIn, m.Replaced = fromNS(notAfter), fromNS(lastSeen), fromNS(signedIn), fromNS(replaced)
	return m, nil
}

// machine reads machine slug of account (a renamed one too); nil when
// there is none.
func (d *cpDB) machine(q querier, account, slug string) (*cpMachine, error) {
	m, err := scanMachine(q.QueryRow(`SELECT `+machineCols+` FROM machines WHERE account = ? AND slug = ?`, account, slug))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read machine %s/%s: %w", account, slug, err)
	}
	return m, nil
}

// machines reads the machines of account, by slug; with renamed, the old
// names of renamed machines too.
func (d *cpDB) machines(q querier, account string, renamed bool) ([]*cpMachine, error) {
	where := `account = ? AND renamed_to = ''`
	if renamed {
		where = `account = ?`
	}
	rows, err := q.Query(`SELECT `+machineCols+` FROM machines WHERE `+where+` ORDER BY slug`, account)
	if err != nil {
		return nil, fmt.Errorf("read the machines of %s: %w", account, err)
	}
	defer rows.Close()
	var ms []*cpMachine
	for rows.Next() {
		m, err := scanMachine(rows)
		if err != nil {
			return nil, fmt.Errorf("read the machines of %s: %w", account, err)
		}
		ms = append(ms, m)
	}
	return ms, rows.Err()
}

// putMachine inserts or replaces machine m.
func putMachine(tx *sql.Tx, m *cpMachine) error {
	_, err := tx.Exec(`INSERT OR REPLACE INTO machines (`+machineCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		m.Account, m.Slug, m.Name, m.Host, m.KeyID, m.Cert, ns(m.NotAfter), m.Addr, m.AcceptRemote, m.Online,
		ns(m.LastSeen), m.Version, ns(m.SignedIn), ns(m.Replaced), m.RenamedTo)
	if err != nil {
		return fmt.Errorf("write machine %s/%s: %w", m.Account, m.Slug, err)
	}
	return nil
}

// revokedOf is account's revoked keys whose certificates have not all
// ended at now.
func (d *cpDB) revokedOf(q querier, account string, now time.Time) ([]remote.Revoked, error) {
	rows, err := q.Query(`SELECT slug, key_id, until FROM revoked WHERE account = ? AND until > ? ORDER BY until, key_id`, account, ns(now))
	if err != nil {
		return nil, fmt.Errorf("read the revoked keys of %s: %w", account, err)
	}
	defer rows.Close()
	list := []remote.Revoked{}
	for rows.Next() {
		var r remote.Revoked
		var until int64
		if err := rows.Scan(&r.Slug, &r.Key, &until); err != nil {
			return nil, err
		}
		r.Until = fromNS(until)
		list = append(list, r)
	}
	return list, rows.Err()
}

// isRevoked reports whether key keyID of account is revoked at now.
func (d *cpDB) isRevoked(q querier, account, keyID string, now time.Time) (bool, error) {
	var one int
	err := q.QueryRow(`SELECT 1 FROM revoked WHERE account = ? AND key_id = ? AND until > ?`, account, keyID, ns(now)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the revoked keys of %s: %w", account, err)
	}
	return true, nil
}

// revoke revokes key keyID of machine slug until until (the later of
// that and what was kept).
func revoke(tx *sql.Tx, account, slug, keyID string, until time.Time) error {
	_, err := tx.Exec(`INSERT INTO revoked (account, key_id, slug, until) VALUES (?,?,?,?)
		ON CONFLICT (account, key_id) DO UPDATE SET until = max(until, excluded.until)`, account, keyID, slug, ns(until))
	if err != nil {
		return fmt.Errorf("revoke the key of %s/%s: %w", account, slug, err)
	}
	return nil
}

// liveKeys is every machine signed in now, by account, slug and key,
// with when its kept certificate ends; a revoked key is not among them.
func (d *cpDB) liveKeys(now time.Time) (map[[3]string]time.Time, error) {
	rows, err := d.db.Query(`SELECT m.account, m.slug, m.key_id, m.not_after FROM machines m
		WHERE m.renamed_to = '' AND NOT EXISTS
		(SELECT 1 FROM revoked r WHERE r.account = m.account AND r.key_id = m.key_id AND r.until > ?)`, ns(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	live := map[[3]string]time.Time{}
	for rows.Next() {
		var k [3]string
		var notAfter int64
		if err := rows.Scan(&k[0], &k[1], &k[2], &notAfter); err != nil {
			return nil, err
		}
		live[k] = fromNS(notAfter)
	}
	return live, rows.Err()
}

// prune drops what has ended at now: revoked keys whose certificates
// have all ended, and old names whose certificates have.
func (d *cpDB) prune(now time.Time) error {
	return d.write(func(tx *sql.Tx) error {
		if _, err := tx.Exec(`DELETE FROM revoked WHERE until <= ?`, ns(now)); err != nil {
			return err
		}
		_, err := tx.Exec(`DELETE FROM machines WHERE renamed_to != '' AND not_after <= ?`, ns(now))
		return err
	})
}

// setMeta keeps a value of the control plane's (its offline-after, for
// st control-plane machines).
func (d *cpDB) setMeta(key, value string) error {
	return d.write(func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, key, value)
		return err
	})
}

func (d *cpDB) meta(key string) (string, error) {
	var v string
	err := d.db.QueryRow(`SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

// writeCAKey keeps account's CA key in its own file, mode 0600.
func (d *cpDB) writeCAKey(account string, keyPEM []byte) error {
	if err := os.MkdirAll(filepath.Join(d.dir, caKeysDirName), 0o700); err != nil {
		return err
	}
	return store.WriteFile(d.caKeyPath(account), keyPEM, 0o600)
}

// errNoFile is true for an error of a file that is not there.
func errNoFile(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// machineCounts counts each account's signed-in machines (not the names
// a machine had before a rename), for /metrics.
func (d *cpDB) machineCounts() (map[string]int, error) {
	rows, err := d.db.Query(`SELECT account, count(*) FROM machines WHERE renamed_to = '' GROUP BY account`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	counts := map[string]int{}
	for rows.Next() {
		var account string
		var n int
		if err := rows.Scan(&account, &n); err != nil {
			return nil, err
		}
		counts[account] = n
	}
	return counts, rows.Err()
}
