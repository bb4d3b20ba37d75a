package tokens

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/tidwall/gjson"
)

// The formats of the agents' records (agent.Records.Tokens names one).
const (
	// FormatClaude is Claude Code's transcript, and the sim's.
	FormatClaude = "claude"
	// FormatCodex is Codex's rollout.
	FormatCodex = "codex"
	// FormatGemini is Gemini CLI's chat file.
	FormatGemini = "gemini"
	// FormatOpencode is the file st's opencode plugin writes: a line per
	// finished assistant message, with opencode's own tokens of it.
	FormatOpencode = "opencode"
)

// KnownFormat reports whether st reads records of this format.
func KnownFormat(f string) bool {
	return f == FormatClaude || f == FormatCodex || f == FormatGemini || f == FormatOpencode
}

// Bounds of one read, so that a huge or hostile file costs a bounded
// amount: a line longer than maxLine is skipped whole (no record st
// reads is that long: usage sits on an assistant record, whose tool
// input or text may be long but not this long); a read takes at most
// maxRead bytes (the rest comes at the next read); a worker's records are
// at most maxFiles files (its subagents' included).
const (
	maxLine  = 8 << 20
	maxRead  = 32 << 20
	maxFiles = 256
	// recentIDs is how many message ids a file remembers: one response's
	// records come one after another (tool results may come between its
	// blocks), so the last few are enough to count each once.
	recentIDs = 8
)

// File is one record file being read, and what was read of it. It is
// plain data: run.json keeps it, and a read goes on from Offset.
type File struct {
	Path   string `json:"path"`
	Format string `json:"format"`
	// Offset is where the next read starts: just past the last whole
	// line read (a line still being written is read again once whole).
	Offset int64 `json:"offset"`
	// Size is the file's size at the last read: a file now shorter was
	// replaced, and is read again from its start.
	Size int64 `json:"size"`
	// ByModel is what was counted in this file, by model ("" when the
	// record names none).
	ByModel map[string]Counts `json:"by_model,omitempty"`
	// Recent are the messages counted last (Claude's message.id,
	// Gemini's id) with what was counted of each: a message seen again
	// adds only what its new record has more.
	Recent []Seen `json:"recent,omitempty"`
	// Last is Codex's running total as last read; Model its model then.
	Last  *Counts `json:"last,omitempty"`
	Model string  `json:"model,omitempty"`
	// Skipping: the read stopped inside a line longer than maxLine,
	// which the next read skips to its end.
	Skipping bool `json:"skipping,omitempty"`
	// Limits are the rate limits a Codex token_count said last, since
	// the last Ledger.TakeLimits (not kept: the agent says them again).
	Limits *RateLimits `json:"-"`
}

// RateLimits are the usage-limit windows an agent's records say of its
// account (Codex's token_count rate_limits: primary, secondary).
type RateLimits struct {
	Primary, Secondary RateWindow
	// File is the record that said them (its account's).
	File string
}

// RateWindow is one window: how much of it is used (percent), its length
// and its reset (epoch seconds; 0 when not said).
type RateWindow struct {
	UsedPercent   float64
	WindowMinutes int64
	ResetsAt      int64
}

// codexLimits reads a token_count's rate_limits, or nil.
func codexLimits(p gjson.Result) *RateLimits {
	rl := p.Get("rate_limits")
	if !rl.IsObject() {
		return nil
	}
	win := func(w gjson.Result) RateWindow {
		return RateWindow{UsedPercent: w.Get("used_percent").Float(), WindowMinutes: w.Get("window_minutes").Int(), ResetsAt: w.Get("resets_at").Int()}
	}
	out := &RateLimits{Primary: win(rl.Get("primary")), Secondary: win(rl.Get("secondary"))}
	if (out.Primary == RateWindow{}) && (out.Secondary == RateWindow{}) {
		return nil
	}
	return out
}

// Seen is a message counted already.
type Seen struct {
	ID     string `json:"id"`
	Counts Counts `json:"counts"`
}

// Counts sums the file's counts over its models.
func (f *File) Counts() Counts {
	var c Counts
	for _, m := range f.ByModel {
		c = c.Add(m)
	}
	return c
}

// Read reads what was added to the file since the last read, and reports
// whether the counts changed. A file not there (yet) is no error: an
// agent writes its transcript after its first hooks fire.
//
// The path came from a hook: only a regular file of this user is read,
// never through a symlink at its end, and never a FIFO or a device that
// would hold the reader (O_NONBLOCK for the open, the mode checked
// before any read). A RAIL against a mistaken or stray path: an agent of
// the same user could write any numbers into its own transcript anyway.
func (f *File) Read() (changed bool, err error) {
	fh, err := os.OpenFile(f.Path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read tokens from %s: %w", f.Path, err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return false, fmt.Errorf("read tokens from %s: %w", f.Path, err)
	}
	if !fi.Mode().IsRegular() {
		return false, fmt.Errorf("read tokens from %s: not a regular file", f.Path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		return false, fmt.Errorf("read tokens from %s: not this user's file", f.Path)
	}
	size := fi.Size()
	if size < f.Size || size < f.Offset {
		// Replaced or cut: what was counted of it no longer stands.
		changed = len(f.ByModel) > 0
		*f = File{Path: f.Path, Format: f.Format}
	}
	f.Size = size
	if size == f.Offset {
		return changed, nil
	}
	if _, err := fh.Seek(f.Offset, io.SeekStart); err != nil {
		return changed, fmt.Errorf("read tokens from %s: %w", f.Path, err)
	}
	br := bufio.NewReaderSize(io.LimitReader(fh, maxRead), 16<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		whole := err == nil
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			// io.EOF, or a read error: the unfinished line is read
			// again next time.
			if errors.Is(err, io.EOF) {
				return changed, nil
			}
			return changed, fmt.Errorf("read tokens from %s: %w", f.Path, err)
		}
		if f.Skipping {
			f.Offset += int64(len(chunk))
			f.Skipping = !whole
			continue
		}
		if len(line)+len(chunk) > maxLine {
			f.Offset += int64(len(line) + len(chunk))
			line = line[:0]
			f.Skipping = !whole
			continue
		}
		line = append(line, chunk...)
		if !whole {
			continue
		}
		f.Offset += int64(len(line))
		if f.take(line) {
			changed = true
		}
		line = line[:0]
	}
}

// take counts one whole line, and reports whether it counted anything.
func (f *File) take(line []byte) bool {
	switch f.Format {
	case FormatClaude:
		return f.takeClaude(line)
	case FormatCodex:
		return f.takeCodex(line)
	case FormatGemini:
		return f.takeGemini(line)
	case FormatOpencode:
		return f.takeOpencode(line)
	}
	return false
}

// takeClaude counts an assistant record's message.usage, once per
// message.id.
func (f *File) takeClaude(line []byte) bool {
	if !bytes.Contains(line, []byte(`"usage"`)) || !gjson.ValidBytes(line) {
		return false
	}
	r := gjson.ParseBytes(line)
	if r.Get("type").String() != "assistant" {
		return false
	}
	u := r.Get("message.usage")
	if !u.IsObject() {
		return false
	}
	c := Counts{
		Input:      nonNeg(u.Get("input_tokens").Int()),
		Output:     nonNeg(u.Get("output_tokens").Int()),
		CacheRead:  nonNeg(u.Get("cache_read_input_tokens").Int()),
		CacheWrite: nonNeg(u.Get("cache_creation_input_tokens").Int()),
	}
	id := r.Get("message.id").String()
	if id == "" {
		id = r.Get("uuid").String()
	}
	return f.count(id, r.Get("message.model").String(), c)
}

// takeGemini counts a reply's tokens, once per message id.
func (f *File) takeGemini(line []byte) bool {
	if !bytes.Contains(line, []byte(`"tokens"`)) || !gjson.ValidBytes(line) {
		return false
	}
	r := gjson.ParseBytes(line)
	t := r.Get("tokens")
	if !t.IsObject() {
		return false
	}
	cached := nonNeg(t.Get("cached").Int())
	in := nonNeg(t.Get("input").Int()) + nonNeg(t.Get("tool").Int())
	c := Counts{
		Input:     nonNeg(in - cached),
		CacheRead: cached,
		Output:    nonNeg(t.Get("output").Int()),
		Reasoning: nonNeg(t.Get("thoughts").Int()),
	}
	return f.count(r.Get("id").String(), r.Get("model").String(), c)
}

// takeOpencode counts an assistant message's tokens as opencode keeps
// them ({input, output, reasoning, cache: {read, write}}, input without
// the cached part), once per message id: the plugin writes a message
// again only when its numbers changed, and a later line adds only what
// it has more.
func (f *File) takeOpencode(line []byte) bool {
	if !bytes.Contains(line, []byte(`"tokens"`)) || !gjson.ValidBytes(line) {
		return false
	}
	r := gjson.ParseBytes(line)
	t := r.Get("tokens")
	if !t.IsObject() {
		return false
	}
	c := Counts{
		Input:      nonNeg(t.Get("input").Int()),
		Output:     nonNeg(t.Get("output").Int()),
		Reasoning:  nonNeg(t.Get("reasoning").Int()),
		CacheRead:  nonNeg(t.Get("cache.read").Int()),
		CacheWrite: nonNeg(t.Get("cache.write").Int()),
	}
	return f.count(r.Get("id").String(), r.Get("model").String(), c)
}

// count adds a message's counts, or, for a message counted already,
// what this record has more of (a later record of one response may carry
// its final output count).
func (f *File) count(id, model string, c Counts) bool {
	add := c
	if id != "" {
		if i := slices.IndexFunc(f.Recent, func(s Seen) bool { return s.ID == id }); i >= 0 {
			old := f.Recent[i].Counts
			top := Counts{Input: max(old.Input, c.Input), Output: max(old.Output, c.Output), CacheRead: max(old.CacheRead, c.CacheRead),
				CacheWrite: max(old.CacheWrite, c.CacheWrite), Reasoning: max(old.Reasoning, c.Reasoning)}
			add = Counts{Input: top.Input - old.Input, Output: top.Output - old.Output, CacheRead: top.CacheRead - old.CacheRead,
				CacheWrite: top.CacheWrite - old.CacheWrite, Reasoning: top.Reasoning - old.Reasoning}
			f.Recent[i].Counts = top
		} else {
			f.Recent = append(f.Recent, Seen{ID: id, Counts: c})
			if len(f.Recent) > recentIDs {
				f.Recent = slices.Delete(f.Recent, 0, len(f.Recent)-recentIDs)
			}
		}
	}
	if add.Total() == 0 {
		return false
	}
	f.addTo(model, add)
	return true
}

func (f *File) addTo(model string, c Counts) {
	if f.ByModel == nil {
		f.ByModel = map[string]Counts{}
	}
	f.ByModel[model] = f.ByModel[model].Add(c)
}

// takeCodex follows the rollout's model (turn_context) and counts what
// each token_count's running total grew by, to the model of the time.
func (f *File) takeCodex(line []byte) bool {
	if !bytes.Contains(line, []byte(`"token_count"`)) && !bytes.Contains(line, []byte(`"turn_context"`)) {
		return false
	}
	if !gjson.ValidBytes(line) {
		return false
	}
	r := gjson.ParseBytes(line)
	if r.Get("type").String() == "turn_context" {
		if m := r.Get("payload.model").String(); m != "" {
			f.Model = m
		}
		return false
	}
	p := r.Get("payload")
	if r.Get("type").String() != "event_msg" || p.Get("type").String() != "token_count" {
		return false
	}
	if rl := codexLimits(p); rl != nil {
		f.Limits = rl
	}
	u := p.Get("info.total_token_usage")
	if !u.IsObject() {
		return false // (info is null before the first response)
	}
	in, cached := nonNeg(u.Get("input_tokens").Int()), nonNeg(u.Get("cached_input_tokens").Int())
	out, reason := nonNeg(u.Get("output_tokens").Int()), nonNeg(u.Get("reasoning_output_tokens").Int())
	total := Counts{Input: nonNeg(in - cached), CacheRead: min(cached, in), Output: nonNeg(out - reason), Reasoning: min(reason, out)}
	delta := total
	if l := f.Last; l != nil {
		d := Counts{Input: total.Input - l.Input, Output: total.Output - l.Output, CacheRead: total.CacheRead - l.CacheRead,
			CacheWrite: total.CacheWrite - l.CacheWrite, Reasoning: total.Reasoning - l.Reasoning}
		if d.Input < 0 || d.Output < 0 || d.CacheRead < 0 || d.Reasoning < 0 {
			// A running total that went down began again (a new
			// session in the same file): it all counts.
			d = total
		}
		delta = d
	}
	f.Last = &total
	if delta.Total() == 0 {
		return false
	}
	f.addTo(f.Model, delta)
	return true
}

func nonNeg(n int64) int64 { return max(n, 0) }

// Ledger is one worker's record files and what was counted in them: its
// agent's transcript, and for Claude its subagents' files, which count to
// it. It is plain data (run.json keeps it); one goroutine at a time reads
// it.
type Ledger struct {
	Files []*File `json:"files,omitempty"`
}

// Watch adds a record file to read, once.
func (l *Ledger) Watch(path, format string) {
	if path == "" || !KnownFormat(format) || len(l.Files) >= maxFiles {
		return
	}
	for _, f := range l.Files {
		if f.Path == path {
			return
		}
	}
	l.Files = append(l.Files, &File{Path: path, Format: format})
}

// Read reads every file's new lines, and for a Claude transcript finds
// its subagents' files (<transcript without .jsonl>/subagents/*.jsonl).
// It reports whether any count changed; errors are per file, and the
// other files are read all the same.
func (l *Ledger) Read() (changed bool, err error) {
	for i := 0; i < len(l.Files); i++ {
		f := l.Files[i]
		if f.Format == FormatClaude && !strings.Contains(f.Path, string(filepath.Separator)+"subagents"+string(filepath.Separator)) {
			l.findSubagents(f.Path)
		}
	}
	var errs []error
	for _, f := range l.Files {
		c, e := f.Read()
		changed = changed || c
		if e != nil {
			errs = append(errs, e)
		}
	}
	return changed, errors.Join(errs...)
}

func (l *Ledger) findSubagents(transcript string) {
	dir := filepath.Join(strings.TrimSuffix(transcript, ".jsonl"), "subagents")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".jsonl") {
			l.Watch(filepath.Join(dir, e.Name()), FormatClaude)
		}
	}
}

// TakeLimits returns the rate limits the records said last since the
// last call (nil: none new), and forgets them.
func (l *Ledger) TakeLimits() *RateLimits {
	var out *RateLimits
	for _, f := range l.Files {
		if f.Limits != nil {
			out, f.Limits = f.Limits, nil
			out.File = f.Path
		}
	}
	return out
}

// ByModel sums the files' counts by model.
func (l *Ledger) ByModel() map[string]Counts {
	out := map[string]Counts{}
	for _, f := range l.Files {
		for m, c := range f.ByModel {
			out[m] = out[m].Add(c)
		}
	}
	return out
}

// Counts sums every file's counts.
func (l *Ledger) Counts() Counts {
	var c Counts
	for _, f := range l.Files {
		c = c.Add(f.Counts())
	}
	return c
}

// Clone is a deep copy of the ledger: the daemon's registry keeps one
// (what run.json writes) while the live one goes on being read.
func (l *Ledger) Clone() *Ledger {
	c := &Ledger{Files: make([]*File, len(l.Files))}
	for i, f := range l.Files {
		cf := *f
		if f.ByModel != nil {
			cf.ByModel = make(map[string]Counts, len(f.ByModel))
			for k, v := range f.ByModel {
				cf.ByModel[k] = v
			}
		}
		cf.Recent = append([]Seen(nil), f.Recent...)
		if f.Last != nil {
			last := *f.Last
			cf.Last = &last
		}
		c.Files[i] = &cf
	}
	return c
}
