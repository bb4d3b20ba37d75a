// Package attention owns st's attention items: "who needs a person, for
// what, since when" (issue 34). An item opens when an agent waits at a
// permission prompt or a question, when a gate opens, when a worker ends
// its turn without a report, fails or is paused, and when a run finishes;
// it closes when the agent moves on (its own next hook) or a person
// answers or dismisses it. internal/orch decides when; this package keeps
// the items, on disk in $ST_HOME/attention.json, so that an open item
// outlives a restart of st, and wakes whoever waits for a new one.
//
// Each item has a key, which says what it is about: one open item per
// key. An agent is at one prompt at a time (PaneKey(pane, Prompt)), one
// turn's end at a time (PaneKey(pane, Turn)); a gate is its own key. A new
// item of a key closes the one before it, as superseded.
package attention

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/store"
	"github.com/sophonz/st/internal/syncs"
)

// What a pane's key is about.
const (
	Prompt = "prompt" // a permission prompt or a question on its screen
	Turn   = "turn"   // how its last turn ended (no report, failed, paused)
)

// PaneKey is the key of pane's items of one sort (Prompt, Turn).
func PaneKey(pane, sort string) string { return "pane:" + pane + ":" + sort }

// GateKey is the key of gate id's item.
func GateKey(id string) string { return "gate:" + id }

// RunKey is the key of run id's "finished" item.
func RunKey(id string) string { return "run:" + id }

// keepClosed bounds the closed items kept for st attention --all.
const keepClosed = 200

// record is an item as attention.json keeps it.
type record struct {
	api.Attention
	Key string `json:"key"`
	Seq uint64 `json:"seq"`
}

// Book keeps the items. Its methods take its own lock and write the file
// after letting it go; the caller must hold no lock that disk I/O should
// not be under (orch calls it from a change's effects).
type Book struct {
	path string
	now  func() time.Time
	logf func(format string, args ...any)

	mu      sync.Mutex
	items   []*record // by Seq
	seq     uint64
	version uint64
	changed chan struct{}

	// wmu orders the writes; written is the version on disk.
	wmu     sync.Mutex
	written uint64
}

// New is a book kept at path (ST_HOME/attention.json).
func New(path string, now func() time.Time, logf func(string, ...any)) *Book {
	if now == nil {
		now = time.Now
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &Book{path: path, now: now, logf: logf, changed: make(chan struct{})}
}

// Load reads the file. A file that does not decode is copied aside and
// left out: the items are a view of the agents, which tell them again.
func (b *Book) Load() {
	var rs []*record
	if _, kept, err := store.ReadJSONOrSetAside(b.path, &rs); err != nil {
		b.logf("skipping the attention items: %v (a copy is kept at %s)", err, kept)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range rs {
		// Untrusted as any file: an item with no id or kind st knows is
		// left out rather than shown.
		if r == nil || r.Seq == 0 || !api.ValidAttentionKind(r.Kind) || r.ID != idOf(r.Seq) {
			continue
		}
		b.items = append(b.items, r)
		b.seq = max(b.seq, r.Seq)
	}
	sort.Slice(b.items, func(i, j int) bool { return b.items[i].Seq < b.items[j].Seq })
}

func idOf(seq uint64) string { return "att-" + strconv.FormatUint(seq, 10) }

// seqOf is the sequence number of an item id, 0 for none.
func seqOf(id string) uint64 {
	s, ok := strings.CutPrefix(id, "att-")
	if !ok {
		return 0
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// Open opens item a under key, and reports whether it is new. An open
// item of the same key, kind and text stands (a Notification after its
// PermissionRequest asks nothing new); another open item of the key is
// closed as superseded.
func (b *Book) Open(key string, a api.Attention) (api.Attention, bool) {
	b.mu.Lock()
	if r := b.openLocked(key); r != nil {
		if r.Kind == a.Kind && r.Text == a.Text {
			out := r.Attention
			b.mu.Unlock()
			return out, false
		}
		b.closeLocked(r, "superseded")
	}
	b.seq++
	a.ID, a.Opened, a.Closed, a.ClosedBy, a.Pushed = idOf(b.seq), b.now(), nil, "", nil
	r := &record{Attention: a, Key: key, Seq: b.seq}
	b.items = append(b.items, r)
	b.pruneLocked()
	b.touchLocked()
	out := r.Attention
	b.mu.Unlock()
	b.persist()
	return out, true
}

// openLocked is the open item of key, if any.
func (b *Book) openLocked(key string) *record {
	syncs.AssertLocked(&b.mu)
	for i := len(b.items) - 1; i >= 0; i-- {
		if r := b.items[i]; r.Key == key && r.Closed == nil {
			return r
		}
	}
	return nil
}

func (b *Book) closeLocked(r *record, by string) {
	syncs.AssertLocked(&b.mu)
	now := b.now()
	r.Closed, r.ClosedBy = &now, by
	b.touchLocked()
}

// touchLocked records a change: a new version to write, and the waiters
// woken.
func (b *Book) touchLocked() {
	syncs.AssertLocked(&b.mu)
	b.version++
	close(b.changed)
	b.changed = make(chan struct{})
}

// pruneLocked drops the oldest closed items beyond keepClosed.
func (b *Book) pruneLocked() {
	syncs.AssertLocked(&b.mu)
	closed := 0
	for _, r := range b.items {
		if r.Closed != nil {
			closed++
		}
	}
	if closed <= keepClosed {
		return
	}
	drop := closed - keepClosed
	kept := b.items[:0]
	for _, r := range b.items {
		if r.Closed != nil && drop > 0 {
			drop--
			continue
		}
		kept = append(kept, r)
	}
	b.items = kept
}

// CloseUnder closes the open items whose keys start with prefix, and
// says whether any closed.
func (b *Book) CloseUnder(prefix, by string) bool {
	_, ok := b.closeWhere(func(r *record) bool { return strings.HasPrefix(r.Key, prefix) }, by)
	return ok
}

// Mirror brings the items under prefix in step with keep (by key): the
// items of another machine's workers as that machine sent them (orch
// checked and named them). A key not in the book opens as a new item of
// this book (its own id), with the other machine's age kept; a key the
// book has, open or closed, stands as it is, so an item a person here
// dismissed stays closed while it is open there; an open item under
// prefix that keep lacks closes, as closed there. It says what opened
// and what closed. Nothing here pushes: the other machine did.
func (b *Book) Mirror(prefix string, keep map[string]api.Attention) (opened, closed []api.Attention) {
	b.mu.Lock()
	seen := map[string]bool{}
	for _, r := range b.items {
		if !strings.HasPrefix(r.Key, prefix) {
			continue
		}
		if _, ok := keep[r.Key]; ok {
			seen[r.Key] = true
		} else if r.Closed == nil {
			b.closeLocked(r, "closed there")
			closed = append(closed, r.Attention)
		}
	}
	keys := make([]string, 0, len(keep))
	for k := range keep {
		if strings.HasPrefix(k, prefix) && !seen[k] {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keep[keys[i]].Opened.Before(keep[keys[j]].Opened) })
	now := b.now()
	for _, k := range keys {
		a := keep[k]
		b.seq++
		// Its age is that machine's; a clock ahead of this one's does
		// not make it younger than new.
		since := a.Opened
		if since.IsZero() || since.After(now) {
			since = now
		}
		a.ID, a.Opened, a.Closed, a.ClosedBy, a.Pushed, a.Prompt = idOf(b.seq), since, nil, "", nil, ""
		b.items = append(b.items, &record{Attention: a, Key: k, Seq: b.seq})
		opened = append(opened, a)
	}
	if len(opened)+len(closed) > 0 {
		b.pruneLocked()
		b.touchLocked()
	}
	b.mu.Unlock()
	if len(opened)+len(closed) > 0 {
		b.persist()
	}
	return opened, closed
}

// CloseKey closes the open item of key, if any, and says which it closed.
func (b *Book) CloseKey(key, by string) (api.Attention, bool) {
	return b.closeWhere(func(r *record) bool { return r.Key == key }, by)
}

// ClosePane closes pane's open items of the given kinds (all kinds when
// none is given) and says whether any closed.
func (b *Book) ClosePane(pane, by string, kinds ...api.AttentionKind) bool {
	_, ok := b.closeWhere(func(r *record) bool {
		if r.Pane != pane || r.Machine != "" {
			return false
		}
		if len(kinds) == 0 {
			return true
		}
		for _, k := range kinds {
			if r.Kind == k {
				return true
			}
		}
		return false
	}, by)
	return ok
}

// closeWhere closes every open item match takes, and returns the last.
func (b *Book) closeWhere(match func(*record) bool, by string) (api.Attention, bool) {
	b.mu.Lock()
	var last *record
	for _, r := range b.items {
		if r.Closed == nil && match(r) {
			b.closeLocked(r, by)
			last = r
		}
	}
	if last == nil {
		b.mu.Unlock()
		return api.Attention{}, false
	}
	out := last.Attention
	b.mu.Unlock()
	b.persist()
	return out, true
}

// ErrNotOpen is the refusal to close an item that is not open.
var ErrNotOpen = errors.New("no open attention item has this id")

// Close closes item id as a person's act (by: "dismissed", "answered").
func (b *Book) Close(id, by string) (api.Attention, error) {
	b.mu.Lock()
	for _, r := range b.items {
		if r.ID == id && r.Closed == nil {
			b.closeLocked(r, by)
			out := r.Attention
			b.mu.Unlock()
			b.persist()
			return out, nil
		}
	}
	b.mu.Unlock()
	return api.Attention{}, fmt.Errorf("%w: %q", ErrNotOpen, id)
}

// Get is item id.
func (b *Book) Get(id string) (api.Attention, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.items {
		if r.ID == id {
			return r.Attention, true
		}
	}
	return api.Attention{}, false
}

// MarkPushed records that the items ids were pushed (or folded into a
// summary push): none is pushed again, across restarts too.
func (b *Book) MarkPushed(ids ...string) {
	b.mu.Lock()
	now := b.now()
	n := 0
	for _, r := range b.items {
		for _, id := range ids {
			if r.ID == id && r.Pushed == nil {
				r.Pushed = &now
				n++
			}
		}
	}
	if n > 0 {
		b.version++ // (no one waits on a push)
	}
	b.mu.Unlock()
	if n > 0 {
		b.persist()
	}
}

// List is the items, the newest first: the open ones, or all that are kept.
func (b *Book) List(all bool) api.AttentionList {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := api.AttentionList{Items: []api.Attention{}}
	for i := len(b.items) - 1; i >= 0; i-- {
		r := b.items[i]
		if r.Closed == nil {
			out.Open++
		}
		if all || r.Closed == nil {
			out.Items = append(out.Items, r.Attention)
		}
	}
	return out
}

// OpenCount is how many items are open.
func (b *Book) OpenCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, r := range b.items {
		if r.Closed == nil {
			n++
		}
	}
	return n
}

// OpenByPane is the open items of this machine's panes, the newest of
// each pane: what the graph and the cards mark.
func (b *Book) OpenByPane() map[string]api.Attention {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]api.Attention{}
	for _, r := range b.items {
		if r.Closed == nil && r.Pane != "" && r.Machine == "" {
			out[r.Pane] = r.Attention
		}
	}
	return out
}

// Newest is the id of the newest item, open or not ("" for none): a
// wait for what opens after now starts from it.
func (b *Book) Newest() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seq == 0 {
		return ""
	}
	return idOf(b.seq)
}

// Changed is closed at the next change of the items.
func (b *Book) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// OpenedAfter is the open items opened after item id ("" or an id st
// never gave: after the start of the book), the newest first.
func (b *Book) OpenedAfter(id string) []api.Attention {
	from := seqOf(id)
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []api.Attention
	for i := len(b.items) - 1; i >= 0; i-- {
		if r := b.items[i]; r.Seq > from && r.Closed == nil {
			out = append(out, r.Attention)
		}
	}
	return out
}

// Retire follows panes renamed by a restart of the tmux server: follow
// gives a pane's new id, or false for a pane that did not come back,
// whose items close as gone.
func (b *Book) Retire(follow func(pane string) (string, bool)) {
	b.mu.Lock()
	n := 0
	for _, r := range b.items {
		if r.Closed != nil || r.Pane == "" || r.Machine != "" || strings.HasPrefix(r.Key, "run:") {
			continue
		}
		p, ok := follow(r.Pane)
		switch {
		case !ok:
			now := b.now()
			r.Closed, r.ClosedBy = &now, "gone"
		case p != r.Pane:
			r.Pane = p
			if strings.HasPrefix(r.Key, "pane:") {
				_, sort, _ := strings.Cut(strings.TrimPrefix(r.Key, "pane:"), ":")
				r.Key = PaneKey(p, sort)
			}
		default:
			continue
		}
		n++
	}
	if n > 0 {
		b.touchLocked()
	}
	b.mu.Unlock()
	if n > 0 {
		b.persist()
	}
}

// IsOpen reports whether key has an open item.
func (b *Book) IsOpen(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.openLocked(key) != nil
}

// persist writes the book if a newer version than the one on disk
// exists. A failed write is logged and tried again with the next change
// or Flush: an item is a view of what the agents said, not a promise.
func (b *Book) persist() {
	if err := b.Flush(); err != nil {
		b.logf("%v (st tries again with the next change)", err)
	}
}

// Flush writes what is not on disk yet.
func (b *Book) Flush() error {
	b.wmu.Lock() // lockio: the write lock, held through its write alone (b.mu is not)
	defer b.wmu.Unlock()
	b.mu.Lock()
	v := b.version
	if v == b.written {
		b.mu.Unlock()
		return nil
	}
	rs := make([]record, len(b.items))
	for i, r := range b.items {
		rs[i] = *r
	}
	b.mu.Unlock()
	if err := store.WriteJSON(b.path, rs, 0o600); err != nil {
		return fmt.Errorf("st could not keep the attention items in %s: %w", b.path, err)
	}
	b.written = v
	return nil
}
