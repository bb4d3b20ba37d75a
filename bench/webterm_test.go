package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/sophonz/st/bench/benchfig"
	"github.com/sophonz/st/internal/testutil"
)

// termClient is one web terminal's socket as a test drives it: send
// types bytes, and every chunk of drawing arrives on out.
type termClient interface {
	send(ctx context.Context, s string) error
	out() <-chan []byte
	wire() int64 // bytes received on the socket so far, framing included
	err() error  // why out closed
	close()
}

// stTerm is st's /term socket: binary frames both ways.
type stTerm struct {
	c     *websocket.Conn
	ch    chan []byte
	nwire atomic.Int64
	rerr  error
}

func dialST(ctx context.Context, base, token, pane string) (*stTerm, error) {
	u := base + "/term?" + url.Values{"pane": {pane}, "token": {token}, "cols": {"200"}, "rows": {"50"}}.Encode()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(u, "http"), nil)
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(64 << 20)
	t := &stTerm{c: c, ch: make(chan []byte, 1<<16)}
	go func() {
		defer close(t.ch)
		for {
			_, data, err := c.Read(context.Background())
			if err != nil {
				t.rerr = err
				return
			}
			t.nwire.Add(int64(len(data)) + 2)
			t.ch <- data
		}
	}()
	return t, nil
}

func (t *stTerm) send(ctx context.Context, s string) error {
	return t.c.Write(ctx, websocket.MessageBinary, []byte(s))
}
func (t *stTerm) out() <-chan []byte { return t.ch }
func (t *stTerm) wire() int64        { return t.nwire.Load() }
func (t *stTerm) err() error         { return t.rerr }
func (t *stTerm) close()             { t.c.Close(websocket.StatusNormalClosure, "") }

// wettyTerm speaks socket.io 4 (engine.io v4) over a websocket the way
// WeTTY 3.2.0's page does (node_modules/wetty/build/client/wetty.js):
// "40" joins the default namespace; the page emits input, resize and,
// after each 262144 characters of data, commit (WeTTY's flow control
// pauses the pty when more than 2 MiB are not committed); the server
// emits data (strings), login and logout, and pings ("2") every 3 s.
type wettyTerm struct {
	c     *websocket.Conn
	ch    chan []byte
	nwire atomic.Int64
	rerr  error
}

func dialWeTTY(ctx context.Context, port int) (*wettyTerm, error) {
	u := fmt.Sprintf("ws://127.0.0.1:%d/socket.io/?EIO=4&transport=websocket", port)
	c, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(64 << 20)
	_, open, err := c.Read(ctx)
	if err != nil || !bytes.HasPrefix(open, []byte("0{")) {
		c.CloseNow()
		return nil, fmt.Errorf("engine.io open: %q %v", open, err)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte("40")); err != nil {
		c.CloseNow()
		return nil, err
	}
	// socket.io closes the connection on an event sent before it has
	// answered the namespace's connect.
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			c.CloseNow()
			return nil, fmt.Errorf("socket.io connect: %v", err)
		}
		if bytes.HasPrefix(msg, []byte("40")) {
			break
		}
		if bytes.HasPrefix(msg, []byte("44")) {
			c.CloseNow()
			return nil, fmt.Errorf("socket.io connect refused: %s", msg)
		}
	}
	t := &wettyTerm{c: c, ch: make(chan []byte, 1<<16)}
	if err := c.Write(ctx, websocket.MessageText, []byte(`42["resize",{"cols":200,"rows":50}]`)); err != nil {
		c.CloseNow()
		return nil, err
	}
	go func() {
		defer close(t.ch)
		uncommitted := 0
		for {
			_, msg, err := c.Read(context.Background())
			if err != nil {
				t.rerr = err
				return
			}
			t.nwire.Add(int64(len(msg)) + 2)
			switch {
			case len(msg) == 1 && msg[0] == '2':
				c.Write(context.Background(), websocket.MessageText, []byte("3"))
			case bytes.HasPrefix(msg, []byte(`42["data",`)):
				var ev []any
				if json.Unmarshal(msg[2:], &ev) != nil || len(ev) != 2 {
					continue
				}
				s, _ := ev[1].(string)
				// The page counts JavaScript string length; UTF-16 units
				// or bytes, it only paces the acknowledgements.
				uncommitted += len(s)
				for uncommitted >= 262144 {
					uncommitted -= 262144
					c.Write(context.Background(), websocket.MessageText, []byte(`42["commit",262144]`))
				}
				t.ch <- []byte(s)
			}
		}
	}()
	return t, nil
}

func (t *wettyTerm) send(ctx context.Context, s string) error {
	msg, _ := json.Marshal([]any{"input", s})
	return t.c.Write(ctx, websocket.MessageText, append([]byte("42"), msg...))
}
func (t *wettyTerm) out() <-chan []byte { return t.ch }
func (t *wettyTerm) wire() int64        { return t.nwire.Load() }
func (t *wettyTerm) err() error         { return t.rerr }
func (t *wettyTerm) close()             { t.c.Close(websocket.StatusNormalClosure, "") }

// drain reads what the client has until it has been quiet for quiet.
func drain(b *testing.B, c termClient, quiet time.Duration) {
	for {
		select {
		case _, ok := <-c.out():
			if !ok {
				b.Fatalf("the terminal socket (%T) closed: %v; WeTTY log:\n%s", c, c.err(), readLog())
			}
		case <-time.After(quiet):
			return
		}
	}
}

// echoLatency types n characters one at a time into a pane at a shell
// prompt (the tty echoes them) and times each until it is drawn.
func echoLatency(b *testing.B, c termClient, n int) []time.Duration {
	ctx := context.Background()
	// Letters that tmux's own escape sequences do not use.
	const letters = "xyzwvq"
	var lat []time.Duration
	drain(b, c, 300*time.Millisecond)
	for i := 0; i < n; i++ {
		if i > 0 && i%40 == 0 {
			c.send(ctx, "\x15") // ^U: clear the line
			drain(b, c, 50*time.Millisecond)
		} else {
			drain(b, c, 5*time.Millisecond)
		}
		ch := letters[i%len(letters) : i%len(letters)+1]
		t0 := time.Now()
		if err := c.send(ctx, ch); err != nil {
			b.Fatal(err)
		}
		deadline := time.After(10 * time.Second)
	wait:
		for {
			select {
			case data, ok := <-c.out():
				if !ok {
					b.Fatalf("the terminal socket (%T) closed: %v; WeTTY log:\n%s", c, c.err(), readLog())
				}
				if bytes.Contains(data, []byte(ch)) {
					lat = append(lat, time.Since(t0))
					break wait
				}
			case <-deadline:
				b.Fatalf("keystroke %d (%q) never came back", i, ch)
			}
		}
	}
	c.send(ctx, "\x15")
	drain(b, c, 100*time.Millisecond)
	return lat
}

// busyOutput has the pane print total bytes of `yes` and times the run
// from the command to the client seeing the end marker; it returns the
// time, the drawing's bytes and the socket's bytes received meanwhile.
func busyOutput(b *testing.B, r *rig, pane string, c termClient, total int) (time.Duration, int64, int64) {
	drain(b, c, 200*time.Millisecond)
	marker := fmt.Sprintf("BUSYEND%d", time.Now().UnixNano()%1000000)
	// The typed line holds the marker split by quotes, so only the echo
	// draws it whole.
	cmd := fmt.Sprintf("yes | head -c %d; echo %s''%s", total, marker[:4], marker[4:])
	w0 := c.wire()
	t0 := time.Now()
	if _, err := r.tmux("send-keys", "-t", pane, "-l", "--", cmd); err != nil {
		b.Fatal(err)
	}
	if _, err := r.tmux("send-keys", "-t", pane, "Enter"); err != nil {
		b.Fatal(err)
	}
	var n int64
	var tail []byte
	deadline := time.After(5 * time.Minute)
	for {
		select {
		case data, ok := <-c.out():
			if !ok {
				b.Fatalf("the terminal socket (%T) closed: %v; WeTTY log:\n%s", c, c.err(), readLog())
			}
			n += int64(len(data))
			tail = append(tail, data...)
			if bytes.Contains(tail, []byte(marker)) {
				d := time.Since(t0)
				drain(b, c, 200*time.Millisecond)
				return d, n, c.wire() - w0
			}
			if len(tail) > 256 {
				tail = append([]byte(nil), tail[len(tail)-64:]...)
			}
		case <-deadline:
			b.Fatal("the busy pane's end marker never came")
		}
	}
}

// wettyLog is WeTTY's log, for failures.
var wettyLog string

// freePort asks the kernel for a free port on 127.0.0.1.
func freePort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startWeTTY runs WeTTY 3.2.0 (installed in bench/wetty, with npm if
// missing) serving `tmux attach` of target on the rig's server, and
// kills its process group at the end.
func startWeTTY(b *testing.B, r *rig, target string) int {
	dir := filepath.Join(testutil.ModuleRoot(), "bench", "wetty")
	main := filepath.Join(dir, "node_modules", "wetty", "build", "main.js")
	if _, err := os.Stat(main); err != nil {
		if _, err := exec.LookPath("npm"); err != nil {
			b.Fatalf("WeTTY is not installed in %s and there is no npm to install it", dir)
		}
		cmd := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "wetty@3.2.0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("npm install wetty@3.2.0: %v\n%s", err, out)
		}
	}
	port := freePort(b)
	command := fmt.Sprintf("tmux -S %s attach -t %s", r.tm.Socket, target)
	cmd := exec.Command("node", main, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--command", command)
	cmd.Env = r.env
	cmd.Dir = r.dir
	logf, err := os.Create(filepath.Join(r.dir, "wetty.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	logf.Close()
	wettyLog = logf.Name()
	pgid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	b.Cleanup(func() {
		syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(3 * time.Second):
			syscall.Kill(-pgid, syscall.SIGKILL)
			<-exited
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return port
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(r.dir, "wetty.log"))
			b.Fatalf("WeTTY exited:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(r.dir, "wetty.log"))
			b.Fatalf("WeTTY did not listen on %d within 30 s:\n%s", port, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// BenchmarkWebTerminal compares st's web terminal with WeTTY 3.2.0, both
// showing the same tmux window (a sh) of a private server, driven by Go
// websocket clients: keystroke-to-echo latency over 200 keystrokes, and
// the rate at which each delivers the drawing of a busy pane (20 MB of
// `yes`, twice). Each is measured alone, the other's client disconnected,
// in alternating blocks.
// Busy figures are totals over both runs. WeTTY batches output for 2 ms
// (its tinybuffer) and sends it as JSON text; tmux draws a fast pane
// differently for each client (it skips what a slow client missed), so
// the busy time is the comparable figure and the bytes drawn are not.
func BenchmarkWebTerminal(b *testing.B) {
	const keystrokes, busyBytes = 200, 20_000_000
	r := newRig(b)
	r.up()
	out, err := r.tmux("new-window", "-d", "-P", "-F", "#{window_index} #{pane_id}", "-t", r.session+":",
		"-n", "term", "-c", r.dir, "env", "PS1=$ ", "sh")
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		b.Fatalf("new-window said %q", out)
	}
	winIndex, pane := f[0], f[1]
	web := strings.TrimSpace(r.mustRun(r.st(r.coord, "web")))
	u, err := url.Parse(web)
	if err != nil || u.Query().Get("token") == "" {
		b.Fatalf("st web printed %q", web)
	}
	base := u.Scheme + "://" + u.Host
	token := u.Query().Get("token")
	wport := startWeTTY(b, r, r.session+":"+winIndex)

	dial := map[string]func() termClient{
		"st": func() termClient {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := dialST(ctx, base, token, pane)
			if err != nil {
				b.Fatalf("st /term: %v\n%s", err, r.explain(pane))
			}
			return c
		},
		"wetty": func() termClient {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := dialWeTTY(ctx, wport)
			if err != nil {
				log, _ := os.ReadFile(filepath.Join(r.dir, "wetty.log"))
				b.Fatalf("WeTTY socket: %v\n%s", err, log)
			}
			return c
		},
	}

	names := []string{"st", "wetty"}
	lat := map[string]stats{}
	busy := map[string]time.Duration{}
	drawn, wire := map[string]int64{}, map[string]int64{}
	b.ResetTimer()
	// Echo: in alternating blocks, each client alone (with both attached
	// at once, tmux 3.3a's server has died under us: see the report), so
	// that both see the same load over the run.
	const blocks = 5
	samples := map[string][]time.Duration{}
	for i := 0; i < blocks; i++ {
		for _, name := range names {
			c := dial[name]()
			samples[name] = append(samples[name], echoLatency(b, c, keystrokes/blocks)...)
			c.close()
			time.Sleep(300 * time.Millisecond)
		}
	}
	for _, name := range names {
		lat[name] = benchfig.NewStats(samples[name])
	}
	time.Sleep(300 * time.Millisecond)
	// Busy output: each alone, twice, alternating.
	for i := 0; i < 2; i++ {
		for _, name := range names {
			c := dial[name]()
			d, n, w := busyOutput(b, r, pane, c, busyBytes)
			busy[name] += d
			drawn[name] += n
			wire[name] += w
			r.tmux("send-keys", "-t", pane, "clear", "Enter")
			c.close()
			time.Sleep(300 * time.Millisecond)
		}
	}
	b.StopTimer()

	for _, name := range []string{"st", "wetty"} {
		l := lat[name]
		fmt.Printf("%s: echo over %d keystrokes median %.2f ms, p99 %.2f ms (min %.2f, max %.2f); "+
			"busy pane (2 runs of %d bytes of yes): %.0f ms, %d bytes drawn (%d on the wire), %.0f KB/s\n",
			name, len(l), benchfig.Ms(l.Median()), benchfig.Ms(l.Pct(99)), benchfig.Ms(l[0]), benchfig.Ms(l[len(l)-1]),
			busyBytes, benchfig.Ms(busy[name]), drawn[name], wire[name], float64(drawn[name])/busy[name].Seconds()/1000)
	}
	for _, name := range []string{"st", "wetty"} {
		benchfig.Figure(b, "webterm_echo_"+name+"_median", benchfig.Ms(lat[name].Median()), "ms")
		benchfig.Figure(b, "webterm_echo_"+name+"_p99", benchfig.Ms(lat[name].Pct(99)), "ms")
		benchfig.Figure(b, "webterm_busy_"+name+"_time", benchfig.Ms(busy[name]), "ms")
		benchfig.Figure(b, "webterm_busy_"+name+"_rate", float64(drawn[name])/busy[name].Seconds()/1000, "KB/s")
		benchfig.Figure(b, "webterm_busy_"+name+"_wire_rate", float64(wire[name])/busy[name].Seconds()/1000, "KB/s")
	}
	benchfig.Figure(b, "webterm_echo_ratio_median", float64(lat["st"].Median())/float64(lat["wetty"].Median()), "x")
	benchfig.Figure(b, "webterm_echo_ratio_p99", float64(lat["st"].Pct(99))/float64(lat["wetty"].Pct(99)), "x")
	benchfig.Figure(b, "webterm_busy_time_ratio", float64(busy["st"])/float64(busy["wetty"]), "x")
	benchfig.Figure(b, "webterm_busy_rate_ratio",
		(float64(drawn["st"])/busy["st"].Seconds())/(float64(drawn["wetty"])/busy["wetty"].Seconds()), "x")
}

func readLog() string {
	data, _ := os.ReadFile(wettyLog)
	return string(data)
}
