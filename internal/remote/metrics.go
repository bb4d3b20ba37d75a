package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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

// cpMetrics are the control plane's counters.
type cpMetrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	heartbeats   *prometheus.CounterVec
	relayConns   *prometheus.GaugeVec
	relayStreams *prometheus.CounterVec
	relayOpen    *prometheus.GaugeVec
	relayBytes   *prometheus.CounterVec

	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

func newCPMetrics(d *cpDB) *cpMetrics {
	m := &cpMetrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "st_cp_requests_total",
			Help: "Requests to the control plane's API, by account (\"\" before the caller is known), route and HTTP status."},
			[]string{"account", "route", "code"}),
		heartbeats: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "st_cp_heartbeats_total",
			Help: "Heartbeats taken, by account."}, []string{"account"}),
		relayConns: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "st_cp_relay_connections",
			Help: "Machines connected to the relay now, by account."}, []string{"account"}),
		relayStreams: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "st_cp_relay_streams_total",
			Help: "Relay streams asked for, by account and result (opened, refused, offline, silent: no first line in time)."},
			[]string{"account", "result"}),
		relayOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "st_cp_relay_streams_open",
			Help: "Relay streams spliced now, by the account of the machines."}, []string{"account"}),
		relayBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "st_cp_relay_bytes_total",
			Help: "Bytes the relay carried between machines, by account."}, []string{"account"}),
	}
	m.reg.MustRegister(m.requests, m.heartbeats, m.relayConns, m.relayStreams, m.relayOpen, m.relayBytes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		machinesCollector{d})
	return m
}

// listen serves /metrics on addr, a loopback address; nothing when addr
// is "".
func (m *cpMetrics) listen(addr string, log io.Writer) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return &Error{Message: fmt.Sprintf("metrics address %q", addr), Err: err, Hint: "give host:port, such as 127.0.0.1:9464"}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return &Error{Message: fmt.Sprintf("the metrics are served only on a loopback address, not %s", host),
			Hint: "--metrics 127.0.0.1:9464, and a scraper on another host reaches it through an SSH tunnel or an authenticating proxy"}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &Error{Message: "the control plane cannot serve its metrics on " + addr, Err: err, Hint: "pick another --metrics port"}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: nil}))
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

func (m *cpMetrics) heartbeat(account string) { m.heartbeats.WithLabelValues(account).Inc() }

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
		m.requests.WithLabelValues(info.account, route, fmt.Sprint(code)).Inc()
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

// machinesCollector counts each account's machines, and those online by
// their last heartbeat, at each scrape.
type machinesCollector struct{ d *cpDB }

var (
	machinesDesc = prometheus.NewDesc("st_cp_machines", "Machines signed in, by account.", []string{"account"}, nil)
)

func (c machinesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- machinesDesc }

func (c machinesCollector) Collect(ch chan<- prometheus.Metric) {
	rows, err := c.d.db.Query(`SELECT account, count(*) FROM machines WHERE renamed_to = '' GROUP BY account`)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(machinesDesc, err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var account string
		var n int
		if err := rows.Scan(&account, &n); err != nil {
			ch <- prometheus.NewInvalidMetric(machinesDesc, err)
			return
		}
		ch <- prometheus.MustNewConstMetric(machinesDesc, prometheus.GaugeValue, float64(n), account)
	}
}
