package agent

import (
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// An agent's usage limits are its account's (a Claude subscriber's
// 5-hour and weekly limits, a ChatGPT plan's for Codex), and one machine
// may hold several accounts of one kind: a second Claude login in
// another CLAUDE_CONFIG_DIR, a Codex with another CODEX_HOME. st names
// the account a conversation file belongs to from the agent's own files:
//
//   - the folder it keeps its settings in, from the conversation file's
//     own path (Claude's <dir>/projects/<folder>/<session>.jsonl, Codex's
//     <home>/sessions/YYYY/MM/DD/rollout-….jsonl): the path the hook
//     named is where the agent wrote, whatever its environment said;
//   - in that folder, the login's name: Claude's .claude.json
//     oauthAccount (emailAddress, else accountUuid; Claude keeps the file
//     in CLAUDE_CONFIG_DIR when set, else in $HOME beside .claude: its
//     own lookup, measured on 2.1.332), Codex's auth.json (the email of
//     its id_token's claims, else its account id). The id_token's
//     signature is not checked: the name is a label for a person, never
//     an authority.
//
// An account no file names is its folder's path. This is a RAIL, not a
// boundary: the files are the user's own, which any agent of the user may
// write; what st takes of them is one short label, read with a size cap
// and a strict parse, its control characters taken out, and shown as
// text.

// Account is the account an agent's records belong to.
type Account struct {
	// Name is the login's own name (an email or an account id); ""
	// when no file of the agent names one.
	Name string
	// Dir is the agent's settings folder the records are in
	// (CLAUDE_CONFIG_DIR, CODEX_HOME); "" when the path is not one of
	// the agent's own.
	Dir string
}

// Label is the account as listings show it: its name, else its folder.
func (a Account) Label() string {
	if a.Name != "" {
		return a.Name
	}
	return a.Dir
}

const (
	// maxAccountFile caps what st reads of an account file: Claude's
	// .claude.json keeps every project's history and grows with use, so
	// its cap is generous; a larger file names no account.
	maxAccountFile = 8 << 20
	// maxAccountName caps a name (an email is at most 254 characters).
	maxAccountName = 254
	// maxIDToken caps Codex's id_token (a few KiB in practice).
	maxIDToken = 64 << 10
)

// claudeAccount names the account of a Claude transcript at path.
func claudeAccount(path string) Account {
	// <dir>/projects/<folder>/<session>.jsonl, or a subagent's
	// <dir>/projects/<folder>/<session>/subagents/agent-….jsonl.
	p := filepath.Dir(path)
	if filepath.Base(p) == "subagents" {
		p = filepath.Dir(filepath.Dir(p))
	}
	projects := filepath.Dir(p)
	if filepath.Base(projects) != "projects" {
		return Account{}
	}
	dir := filepath.Dir(projects)
	a := Account{Dir: cleanLabel(dir)}
	if a.Dir != dir {
		return Account{} // a folder with control characters: named by nothing
	}
	file := filepath.Join(dir, ".claude.json")
	if _, err := os.Lstat(file); err != nil && filepath.Base(dir) == ".claude" {
		// CLAUDE_CONFIG_DIR unset: Claude keeps .claude.json in $HOME.
		file = filepath.Join(filepath.Dir(dir), ".claude.json")
	}
	a.Name = accountFiles.name(file, claudeAccountName)
	return a
}

// claudeAccountName reads .claude.json's oauthAccount.
func claudeAccountName(data []byte) string {
	o := gjson.GetBytes(data, "oauthAccount")
	if !o.IsObject() {
		return ""
	}
	for _, k := range []string{"emailAddress", "accountUuid"} {
		if v := o.Get(k); v.Type == gjson.String {
			if s := cleanLabel(v.String()); s != "" {
				return s
			}
		}
	}
	return ""
}

// codexAccount names the account of a Codex rollout at path.
func codexAccount(path string) Account {
	// <home>/sessions/YYYY/MM/DD/rollout-….jsonl
	sessions := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(path))))
	if filepath.Base(sessions) != "sessions" {
		return Account{}
	}
	home := filepath.Dir(sessions)
	a := Account{Dir: cleanLabel(home)}
	if a.Dir != home {
		return Account{}
	}
	a.Name = accountFiles.name(filepath.Join(home, "auth.json"), codexAccountName)
	return a
}

// codexAccountName reads auth.json: the email in its id_token's claims
// (OpenID's email, or OpenAI's profile claim), else its account id.
func codexAccountName(data []byte) string {
	tok := gjson.GetBytes(data, "tokens")
	if !tok.IsObject() {
		return "" // an API key: no account named
	}
	var claims gjson.Result
	if id := tok.Get("id_token"); id.Type == gjson.String && len(id.Str) <= maxIDToken {
		claims = jwtClaims(id.Str)
	}
	for _, v := range []gjson.Result{
		claims.Get("email"),
		claims.Get(`https://api\.openai\.com/profile.email`),
		tok.Get("account_id"),
		claims.Get(`https://api\.openai\.com/auth.chatgpt_account_id`),
	} {
		if v.Type == gjson.String {
			if s := cleanLabel(v.Str); s != "" {
				return s
			}
		}
	}
	return ""
}

// jwtClaims decodes a JWT's payload (its signature unchecked), or an
// empty result when it is not one.
func jwtClaims(tok string) gjson.Result {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return gjson.Result{}
	}
	data, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil || !gjson.ValidBytes(data) {
		return gjson.Result{}
	}
	r := gjson.ParseBytes(data)
	if !r.IsObject() {
		return gjson.Result{}
	}
	return r
}

// cleanLabel is s without control or format characters (a terminal's
// escapes, bidirectional overrides), trimmed; "" when it is not UTF-8 or
// longer than a name may be.
func cleanLabel(s string) string {
	if !utf8.ValidString(s) {
		return ""
	}
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.In(r, unicode.Cf) {
			return -1
		}
		return r
	}, s))
	if utf8.RuneCountInString(s) > maxAccountName && !filepath.IsAbs(s) {
		return ""
	}
	return s
}

// accountCache keeps each account file's name while the file is
// unchanged (its size and time): Claude runs its status line after each
// response, and .claude.json may be megabytes.
type accountCache struct {
	mu sync.Mutex
	by map[string]cachedName
}

type cachedName struct {
	size int64
	mod  time.Time
	name string
}

var accountFiles = &accountCache{by: map[string]cachedName{}}

// name is what parse reads in file, a regular file (no symlink) of at
// most maxAccountFile bytes and a JSON object; "" otherwise.
func (c *accountCache) name(file string, parse func([]byte) string) string {
	fi, err := os.Lstat(file)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxAccountFile {
		return ""
	}
	c.mu.Lock()
	got, ok := c.by[file]
	c.mu.Unlock()
	if ok && got.size == fi.Size() && got.mod.Equal(fi.ModTime()) {
		return got.name
	}
	name := readAccountFile(file, parse)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.by) >= 256 {
		clear(c.by) // (a machine has a handful of accounts)
	}
	c.by[file] = cachedName{size: fi.Size(), mod: fi.ModTime(), name: name}
	return name
}

func readAccountFile(file string, parse func([]byte) string) string {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	data, err := io.ReadAll(io.LimitReader(f, maxAccountFile+1))
	if err != nil || len(data) > maxAccountFile || !gjson.ValidBytes(data) || !gjson.ParseBytes(data).IsObject() {
		return ""
	}
	return parse(data)
}
