package controlplane

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/remote"
)

// The relay: every signed-in machine keeps one connection to its control
// plane (a websocket over the control plane's HTTPS, GET /v1/relay), and
// yamux carries many streams over it. A machine that cannot dial another
// opens a stream and names the machine it wants; the control plane opens
// a stream on that machine's connection and splices the two. The two
// machines then run their mutual TLS inside, so what the control plane
// splices is TLS records it cannot read, between machines it checked are
// of one account and still signed in.
//
// The first line of a stream a machine opens is JSON, {"to":"beta"}; the
// control plane answers one line, {"ok":true} or {"error":...}. The first
// line of a stream the control plane opens on a machine is {"from":"alpha"}
// (for its log only: the TLS inside proves who it is). After those lines,
// the bytes are the machines' own.

// A stream must say where it goes within relayFirstLineWait, and a
// machine may have relayPendingMax streams at once that have not yet (or
// were refused and not yet closed by it). Past that the relay takes no
// more of its streams until one is done: new ones wait in yamux's accept
// backlog, and past that yamux resets them at once, keeping nothing of
// them (issue 23, item 9: streams that never sent their first line grew
// the control plane from 30 to 212 MB in 8 s).
const (
	relayFirstLineWait = 5 * time.Second
	relayPendingMax    = 16
)

// relayHub is the control plane's side of the relay.
type relayHub struct {
	cp             *ControlPlane
	maxStreams     int // a machine's, opened by it
	maxPairStreams int // a machine's to one machine
	rate           float64
	record         string

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	seq    atomic.Uint64

	mu       sync.Mutex
	sessions map[string]*relayEnd // account/slug
	pairs    map[[2]*relayEnd]int // streams open from one end to another
	wg       sync.WaitGroup
}

// relayEnd is one machine's relay connection.
type relayEnd struct {
	account, slug string
	key           string    // keyID of the certificate it connected with
	notAfter      time.Time // when that certificate ends
	mux           *yamux.Session
	conn          uint64        // its number in the log
	opened        int           // open streams it opened (under hub.mu)
	slots         chan struct{} // one per stream of its not yet spliced or closed
	bucket        *bucket
	bytes         cpconfig.Counter // its account's relayed bytes
}

func (e *relayEnd) name() string { return e.account + "/" + e.slug }

func newRelayHub(cp *ControlPlane) *relayHub {
	h := &relayHub{cp: cp, maxStreams: cp.opt.RelayStreams, maxPairStreams: cp.opt.RelayPairStreams, rate: float64(cp.opt.RelayRate),
		record: cp.opt.RelayRecord, sessions: map[string]*relayEnd{}, pairs: map[[2]*relayEnd]int{}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.wg.Add(1)
	go h.sweep()
	return h
}

func (h *relayHub) logf(format string, args ...any) {
	fmt.Fprintf(h.cp.opt.Log, "relay: "+format+"\n", args...)
}

// close ends every relay connection and waits for their streams.
func (h *relayHub) close() {
	h.cancel()
	h.mu.Lock()
	for _, e := range h.sessions {
		e.mux.Close()
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// serve is GET /v1/relay: the machine's one relay connection, for as
// long as it lasts.
func (h *relayHub) serve(w http.ResponseWriter, r *http.Request, a *cpAccount, m *cpMachine, leaf *x509.Certificate) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		h.logf("%s/%s: not a websocket: %v", a.Name, m.Slug, err)
		return
	}
	h.wg.Add(1)
	defer h.wg.Done()
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	mux, err := yamux.Server(websocket.NetConn(ctx, c, websocket.MessageBinary), remote.YamuxConfig())
	if err != nil {
		c.Close(websocket.StatusInternalError, "relay")
		return
	}
	e := &relayEnd{account: a.Name, slug: m.Slug, key: remote.KeyID(leaf.PublicKey), notAfter: leaf.NotAfter, mux: mux,
		conn: h.seq.Add(1), bucket: newBucket(h.rate), bytes: h.cp.metrics.RelayBytes(a.Name),
		slots: make(chan struct{}, relayPendingMax)}
	h.mu.Lock()
	if h.ctx.Err() != nil {
		h.mu.Unlock()
		mux.Close()
		return
	}
	old := h.sessions[e.name()]
	h.sessions[e.name()] = e
	h.mu.Unlock()
	if old != nil {
		old.mux.Close() // its st connected again; the old one is dead or about to be
	}
	h.logf("%s connected (connection %d, from %s)", e.name(), e.conn, r.RemoteAddr)
	conns := h.cp.metrics.RelayConns(a.Name)
	conns.Inc()
	defer conns.Dec()
	h.accept(e)
	mux.Close()
	h.mu.Lock()
	if h.sessions[e.name()] == e {
		delete(h.sessions, e.name())
	}
	h.mu.Unlock()
	h.logf("%s disconnected (connection %d)", e.name(), e.conn)
}

// accept takes the streams machine e opens until its connection ends,
// each once one of its slots is free (see relayPendingMax).
func (h *relayHub) accept(e *relayEnd) {
	for {
		select {
		case e.slots <- struct{}{}:
		case <-e.mux.CloseChan():
			return
		}
		st, err := e.mux.AcceptStream()
		if err != nil {
			<-e.slots
			return
		}
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.stream(e, st)
		}()
	}
}

// stream serves one stream machine from opened: it names the machine to
// reach, and is spliced to it. It holds one of from's slots until then.
func (h *relayHub) stream(from *relayEnd, st *yamux.Stream) {
	defer st.Close()
	held := true
	release := func() {
		if held {
			held = false
			<-from.slots
		}
	}
	defer release()
	st.SetReadDeadline(time.Now().Add(relayFirstLineWait))
	line, err := remote.ReadLine(st)
	st.SetReadDeadline(time.Time{})
	if err != nil {
		h.cp.metrics.RelayStream(from.account, "silent")
	}
	var req remote.RelayOpen
	if err != nil || json.Unmarshal(line, &req) != nil {
		return
	}
	to, out, rep := h.open(from, req.To)
	if rep != nil {
		result := "refused"
		if rep.Offline {
			result = "offline"
		}
		h.cp.metrics.RelayStream(from.account, result)
		h.logf("%s -> %s/%s refused: %s", from.name(), from.account, safeName(req.To), rep.Error)
		remote.WriteLine(st, rep)
		// The slot is held until the machine closes its end (st's relay
		// client does at once), so that refused streams left open do not
		// pile up.
		st.Close()
		st.SetReadDeadline(time.Now().Add(relayFirstLineWait))
		io.Copy(io.Discard, io.LimitReader(st, remote.RelayLineMax))
		return
	}
	release()
	h.cp.metrics.RelayStream(from.account, "opened")
	open := h.cp.metrics.RelayOpen(from.account)
	open.Inc()
	defer open.Dec()
	defer h.release(from, to)
	defer out.Close()
	if err := remote.WriteLine(st, remote.RelayReply{OK: true}); err != nil {
		return
	}
	n := h.seq.Add(1)
	h.logf("%s -> %s: stream %d opened", from.name(), to.name(), n)
	start := time.Now()
	var tapOut, tapBack io.WriteCloser
	if h.record != "" {
		tapOut, tapBack = h.tap(n, from, to, line)
	}
	up, down := h.splice(st, out, from, to, tapOut, tapBack)
	h.logf("%s -> %s: stream %d closed after %s: %d bytes there, %d back", from.name(), to.name(), n,
		time.Since(start).Round(time.Millisecond), up, down)
}

// safeName is a slug for the log, or a placeholder for anything else a
// machine sent.
func safeName(s string) string {
	if remote.ValidName(s) {
		return s
	}
	return "(a bad name)"
}

// open checks that from may reach machine slug now and opens a stream to
// it. It answers a refusal instead when not.
func (h *relayHub) open(from *relayEnd, slug string) (*relayEnd, *yamux.Stream, *remote.RelayReply) {
	if !remote.ValidName(slug) {
		return nil, nil, &remote.RelayReply{Error: "that is not a machine's slug"}
	}
	if slug == from.slug {
		return nil, nil, &remote.RelayReply{Error: "a machine does not reach itself through the relay"}
	}
	// Both ends must still be signed in with the keys they connected with:
	// a machine removed or signed out since is cut off here, not only at
	// its next connection.
	now := time.Now()
	if ok, err := h.current(from, now); err != nil || !ok {
		if err != nil {
			return nil, nil, &remote.RelayReply{Error: "the control plane cannot read its state", Offline: true}
		}
		from.mux.Close()
		return nil, nil, &remote.RelayReply{Error: fmt.Sprintf("machine %s is no longer signed in to account %s", from.slug, from.account), Hint: remote.LoginHint}
	}
	h.mu.Lock()
	to := h.sessions[from.account+"/"+slug]
	h.mu.Unlock()
	if to == nil {
		if m, err := h.cp.db.machine(h.cp.db.db, from.account, slug); err == nil && (m == nil || m.RenamedTo != "") {
			return nil, nil, &remote.RelayReply{Error: fmt.Sprintf("account %s has no machine %s", from.account, slug), Hint: "st machines lists the account's machines"}
		}
		return nil, nil, &remote.RelayReply{Error: fmt.Sprintf("machine %s is not connected to the control plane", slug), Offline: true,
			Hint: "check that st runs there (st up)"}
	}
	if ok, err := h.current(to, now); err != nil || !ok {
		if err == nil {
			to.mux.Close()
		}
		return nil, nil, &remote.RelayReply{Error: fmt.Sprintf("machine %s is no longer signed in to account %s", slug, from.account)}
	}
	if rep := h.take(from, to); rep != nil {
		return nil, nil, rep
	}
	out, err := to.mux.OpenStream()
	if err == nil {
		out.SetWriteDeadline(time.Now().Add(10 * time.Second))
		err = remote.WriteLine(out, remote.RelayIncoming{From: from.slug})
		out.SetWriteDeadline(time.Time{})
	}
	if err != nil {
		if out != nil {
			out.Close()
		}
		h.release(from, to)
		return nil, nil, &remote.RelayReply{Error: fmt.Sprintf("machine %s's connection to the control plane failed: %v", slug, err), Offline: true}
	}
	return to, out, nil
}

// take counts a stream from one end to the other, or refuses it when
// it would pass from's limit or the pair's.
func (h *relayHub) take(from, to *relayEnd) *remote.RelayReply {
	h.mu.Lock()
	defer h.mu.Unlock()
	pair := [2]*relayEnd{from, to}
	switch {
	case from.opened >= h.maxStreams:
		return &remote.RelayReply{Error: fmt.Sprintf("machine %s has %d streams open through the relay, its limit", from.slug, h.maxStreams),
			Hint: "close some web terminals, or raise st control-plane serve --relay-streams"}
	case h.pairs[pair] >= h.maxPairStreams:
		return &remote.RelayReply{Error: fmt.Sprintf("machine %s has %d streams open to %s through the relay, the limit for one machine", from.slug, h.maxPairStreams, to.slug),
			Hint: "close some web terminals of " + to.slug + ", or raise st control-plane serve --relay-pair-streams"}
	}
	from.opened++
	h.pairs[pair]++
	return nil
}

func (h *relayHub) release(from, to *relayEnd) {
	h.mu.Lock()
	defer h.mu.Unlock()
	from.opened--
	pair := [2]*relayEnd{from, to}
	if h.pairs[pair]--; h.pairs[pair] <= 0 {
		delete(h.pairs, pair)
	}
}

// current reports whether end e's machine is still signed in with the
// key it connected with, that key is not revoked, and a certificate of
// it has not ended (the one it connected with, or a renewal of it: the
// key is the same, so a renewal does not cut the connection).
func (h *relayHub) current(e *relayEnd, now time.Time) (bool, error) {
	m, err := h.cp.db.machine(h.cp.db.db, e.account, e.slug)
	if err != nil || m == nil {
		return false, err
	}
	if m.RenamedTo != "" || m.KeyID != e.key || (!now.Before(e.notAfter) && !now.Before(m.NotAfter)) {
		return false, nil
	}
	revoked, err := h.cp.db.isRevoked(h.cp.db.db, e.account, e.key, now)
	return err == nil && !revoked, err
}

// sweep cuts the connections of machines removed or signed out, every
// 2 s, so that none keeps a stream it opened before: cutting a machine's
// connection ends every stream spliced to it, at both ends.
func (h *relayHub) sweep() {
	defer h.wg.Done()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		live, err := h.cp.db.liveKeys(time.Now())
		if err != nil {
			continue
		}
		now := time.Now()
		h.mu.Lock()
		var gone []*relayEnd
		for _, e := range h.sessions {
			notAfter, ok := live[[3]string{e.account, e.slug, e.key}]
			if !ok || (!now.Before(e.notAfter) && !now.Before(notAfter)) {
				gone = append(gone, e)
			}
		}
		h.mu.Unlock()
		for _, e := range gone {
			h.logf("%s is no longer signed in with the key it connected with, or its certificate ended: connection %d closed", e.name(), e.conn)
			e.mux.Close()
		}
	}
}

// splice copies both ways until both are done, each way paid from the
// sending machine's bucket.
func (h *relayHub) splice(a, b *yamux.Stream, ea, eb *relayEnd, tapAB, tapBA io.WriteCloser) (ab, ba int64) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); ab = h.pipe(b, a, ea, tapAB) }()
	go func() { defer wg.Done(); ba = h.pipe(a, b, eb, tapBA) }()
	wg.Wait()
	return ab, ba
}

func (h *relayHub) pipe(dst, src *yamux.Stream, payer *relayEnd, tap io.WriteCloser) int64 {
	if tap != nil {
		defer tap.Close()
	}
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := src.Read(buf)
		if k > 0 {
			if !payer.bucket.wait(h.ctx, k) {
				src.Close()
				dst.Close()
				return n
			}
			if tap != nil {
				tap.Write(buf[:k])
			}
			payer.bytes.Add(float64(k))
			if _, werr := dst.Write(buf[:k]); werr != nil {
				src.Close()
				return n
			}
			n += int64(k)
		}
		if err != nil {
			// The sender is done: the other end is told, and reads what is
			// left the other way.
			dst.Close()
			if !errors.Is(err, io.EOF) || src.Session().IsClosed() {
				// The sender is gone (its connection cut: removed, signed
				// out, or dead), not done: the other way ends too, now,
				// rather than when the other end thinks to close.
				src.Close()
				dst.SetReadDeadline(time.Now())
			}
			return n
		}
	}
}

// tap opens the files that keep what stream n carried, for
// --relay-record: what the relay itself read, so that anyone can check it
// holds nothing but the first line and TLS records.
func (h *relayHub) tap(n uint64, from, to *relayEnd, first []byte) (io.WriteCloser, io.WriteCloser) {
	base := filepath.Join(h.record, fmt.Sprintf("%06d-%s-%s-%s", n, from.account, from.slug, to.slug))
	out, err := os.OpenFile(base+".out", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		h.logf("record: %v", err)
		return nil, nil
	}
	back, err := os.OpenFile(base+".back", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		out.Close()
		h.logf("record: %v", err)
		return nil, nil
	}
	out.Write(append(append([]byte(nil), first...), '\n'))
	return out, back
}

// bucket is a token bucket of bytes: rate a second, a burst of twice that.
type bucket struct {
	mu     sync.Mutex
	rate   float64
	tokens float64
	last   time.Time
}

func newBucket(rate float64) *bucket {
	return &bucket{rate: rate, tokens: 2 * rate, last: time.Now()}
}

// wait takes n bytes, sleeping while the bucket is in debt. It reports
// false when ctx ended first.
func (b *bucket) wait(ctx context.Context, n int) bool {
	if b.rate <= 0 {
		return true
	}
	b.mu.Lock()
	now := time.Now()
	b.tokens += now.Sub(b.last).Seconds() * b.rate
	if max := 2 * b.rate; b.tokens > max {
		b.tokens = max
	}
	b.last = now
	b.tokens -= float64(n)
	debt := b.tokens
	b.mu.Unlock()
	if debt >= 0 {
		return true
	}
	t := time.NewTimer(time.Duration(-debt / b.rate * float64(time.Second)))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
