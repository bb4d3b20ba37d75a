package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/sophonz/st/internal/cpconfig"
	"github.com/sophonz/st/internal/remote"
)

// The control plane's /metrics, in Prometheus's text format: requests,
// heartbeats, relay connections, streams and bytes, per account.
//
// Who may read them is a boundary: they name the accounts and how busy
// each is (never a machine's name, key or certificate, and nothing a
// stream carries). So they are served only on a listener of their own
// (serve --metrics 127.0.0.1:9464), which must be a loopback address, and
// never on the control plane's own port, which the machines of every
// account (and anyone on the network) reach. A scraper on another host
// reaches it through an SSH tunnel or a proxy that does its own
// authentication. Other users of the control plane's host can read it
// (loopback TCP has no owner): run the control plane on a host of its own,
// or leave --metrics out.
//
// The account label is set only once the caller proved it belongs to the
// account (its key at sign-in, its certificate after): a stranger's
// requests count under account "", so that a name a stranger makes up
// never becomes a label.

// cpMetrics are the control plane's meter and its listener.
type cpMetrics struct {
	cpconfig.Meter
	machines func() (map[string]int, error)

	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

func newCPMetrics(d *cpDB, m cpconfig.Meter) *cpMetrics {
	if m == nil {
		m = noMeter{}
	}
	return &cpMetrics{Meter: m, machines: d.machineCounts}
}

// noMeter counts nothing.
type noMeter struct{}

func (noMeter) Request(string, string, string)                      {}
func (noMeter) Heartbeat(string)                                    {}
func (noMeter) RelayStream(string, string)                          {}
func (noMeter) RelayConns(string) cpconfig.Gauge                    { return noCount{} }
func (noMeter) RelayOpen(string) cpconfig.Gauge                     { return noCount{} }
func (noMeter) RelayBytes(string) cpconfig.Counter                  { return noCount{} }
func (noMeter) Handler(func() (map[string]int, error)) http.Handler { return nil }

type noCount struct{}

func (noCount) Inc()        {}
func (noCount) Dec()        {}
func (noCount) Add(float64) {}

// listen serves /metrics on addr, a loopback address; nothing when addr
// is "".
func (m *cpMetrics) listen(addr string, log io.Writer) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return &remote.Error{Message: fmt.Sprintf("metrics address %q", addr), Err: err, Hint: "give host:port, such as 127.0.0.1:9464"}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return &remote.Error{Message: fmt.Sprintf("the metrics are served only on a loopback address, not %s", host),
			Hint: "--metrics 127.0.0.1:9464, and a scraper on another host reaches it through an SSH tunnel or an authenticating proxy"}
	}
	h := m.Handler(m.machines)
	if h == nil {
		return &remote.Error{Message: "this program does not serve the control plane's metrics",
			Hint: "run st-control-plane serve (or st control-plane serve, which runs it)"}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &remote.Error{Message: "the control plane cannot serve its metrics on " + addr, Err: err, Hint: "pick another --metrics port"}
	}
	mux := http.NewServeMux()
	mux.Handle(metricsRoute.Method+" "+metricsRoute.Path, h)
	m.ln, m.done = ln, make(chan struct{})
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(m.done)
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(log, "metrics: %v\n", err)
		}
	}()
	return nil
}

func (m *cpMetrics) url() string {
	if m.ln == nil {
		return ""
	}
	return "http://" + m.ln.Addr().String() + "/metrics"
}

func (m *cpMetrics) close() {
	if m.srv != nil {
		m.srv.Close()
		<-m.done
	}
}

// reqInfo is what a handler learns of a request for its count: the
// account its caller proved it belongs to.
type reqInfo struct{ account string }

type reqInfoKey struct{}

// setAccount labels r's count with account, once the caller proved it.
func setAccount(r *http.Request, account string) {
	if info, ok := r.Context().Value(reqInfoKey{}).(*reqInfo); ok {
		info.account = account
	}
}

// count counts each request of h by account, route and status.
func (m *cpMetrics) count(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := &reqInfo{}
		r = r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, info))
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		route := r.Pattern // set by the mux on this request
		if route == "" {
			route = "(none)"
		}
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		m.Request(info.account, route, strconv.Itoa(code))
	})
}

// statusWriter keeps the status a handler answered; Unwrap lets the
// websocket of the relay take the connection over.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
