// Package cpserver is what only the control plane's server links, kept
// out of the st binary: the SQLite driver its database opens
// (modernc.org/sqlite) and its Prometheus meter (client_golang). Every
// agent hook, report and list is an st process, and these two libraries'
// package initialisation alone was about 1 ms of each one's start (a
// third of a bare `st version`), so st-control-plane imports this package
// and st does not (internal/cli TestImports holds it).
//
// Tests that run a control plane in their own process import it too.
package cpserver

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	_ "modernc.org/sqlite" // the database/sql driver "sqlite", pure Go
)

// Meter counts the control plane's requests, heartbeats and relay
// traffic per account, and serves them in Prometheus's text format. It
// is a cpconfig.Meter (the interface is there, so that this package need
// not import internal/controlplane, whose tests import this one).
type Meter struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	heartbeats   *prometheus.CounterVec
	relayConns   *prometheus.GaugeVec
	relayStreams *prometheus.CounterVec
	relayOpen    *prometheus.GaugeVec
	relayBytes   *prometheus.CounterVec
}

// NewMeter makes a meter with a registry of its own (never the global
// one), holding the Go runtime's and the process's collectors besides
// st's counters.
func NewMeter() *Meter {
	m := &Meter{
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
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Request counts one request of account to route, answered with code.
func (m *Meter) Request(account, route, code string) {
	m.requests.WithLabelValues(account, route, code).Inc()
}

// Heartbeat counts one heartbeat of a machine of account.
func (m *Meter) Heartbeat(account string) { m.heartbeats.WithLabelValues(account).Inc() }

// RelayStream counts one stream a machine of account asked for, by its
// result.
func (m *Meter) RelayStream(account, result string) {
	m.relayStreams.WithLabelValues(account, result).Inc()
}

// RelayConns is the gauge of account's machines connected to the relay.
func (m *Meter) RelayConns(account string) interface {
	Inc()
	Dec()
} {
	return m.relayConns.WithLabelValues(account)
}

// RelayOpen is the gauge of account's streams spliced now.
func (m *Meter) RelayOpen(account string) interface {
	Inc()
	Dec()
} {
	return m.relayOpen.WithLabelValues(account)
}

// RelayBytes is the counter of the bytes account's machines relayed.
func (m *Meter) RelayBytes(account string) interface{ Add(float64) } {
	return m.relayBytes.WithLabelValues(account)
}

// Handler serves the metrics; machines, asked at each scrape, counts each
// account's signed-in machines (st_cp_machines).
func (m *Meter) Handler(machines func() (map[string]int, error)) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(machinesCollector(machines))
	return promhttp.HandlerFor(prometheus.Gatherers{m.reg, reg}, promhttp.HandlerOpts{})
}

var machinesDesc = prometheus.NewDesc("st_cp_machines", "Machines signed in, by account.", []string{"account"}, nil)

// machinesCollector counts each account's machines at each scrape.
type machinesCollector func() (map[string]int, error)

func (c machinesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- machinesDesc }

func (c machinesCollector) Collect(ch chan<- prometheus.Metric) {
	counts, err := c()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(machinesDesc, err)
		return
	}
	for account, n := range counts {
		ch <- prometheus.MustNewConstMetric(machinesDesc, prometheus.GaugeValue, float64(n), account)
	}
}
