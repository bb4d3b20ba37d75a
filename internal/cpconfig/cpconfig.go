// Package cpconfig is what the command line and the control plane share:
// the options of st control-plane serve and their defaults, the meter it
// counts with, and the control plane's operations as the command line
// calls them (Service). st parses the control-plane commands (their flags
// and defaults come from here) but links no server: cmd/st-control-plane
// gives the command line an internal/controlplane Service, and in st,
// where Env.ControlPlane is nil, st control-plane runs st-control-plane
// instead (internal/cli TestImports keeps internal/controlplane out of
// cmd/st).
package cpconfig

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/sophonz/st/internal/remote"
)

// DefaultOfflineAfter is how long after its last heartbeat a machine
// counts as offline.
const DefaultOfflineAfter = 30 * time.Second

// Relay defaults: streams a machine may have opened at once (an HTTP
// connection, a long poll or a web terminal is one), how many of them may
// go to one machine, and bytes a second a machine may send through the
// relay (a burst of twice that is let through at once).
//
// The streams a machine opened count against it alone, and those to one
// machine against the pair too: a machine cannot use up another's (issue
// 23, item 9: one machine that held 128 streams to beta, counted at both
// ends, locked beta out of the relay). A machine takes streams from every
// other, each within its pair's limit.
const (
	DefaultRelayStreams     = 128
	DefaultRelayPairStreams = 32
	DefaultRelayRate        = 16 << 20
)

// ServerOptions configure a control plane.
type ServerOptions struct {
	// Data is the control plane's folder.
	Data string
	// OfflineAfter is how long after its last heartbeat a machine is
	// offline; DefaultOfflineAfter when zero.
	OfflineAfter time.Duration
	// Log gets a line for each sign-in, renewal and sign-out; nil for none.
	// What a machine sent is made plain before it is written (plainLog).
	Log io.Writer

	// CertFile and KeyFile are the control plane's own certificate (a
	// public CA's, say), used instead of the one it makes from its CA.
	CertFile, KeyFile string
	// Names are host names its own certificate is made for, besides
	// 127.0.0.1, localhost and the host of the listen address.
	Names []string
	// PlainHTTP serves HTTP without TLS, for a TLS terminator in front
	// (Caddy, nginx, a load balancer). Machines then prove themselves with
	// signed headers instead of their certificate in the handshake.
	PlainHTTP bool

	// RelayStreams is how many streams a machine may have opened through
	// the relay at once (DefaultRelayStreams when zero), RelayPairStreams
	// how many of them may go to one machine (DefaultRelayPairStreams
	// when zero), and RelayRate how many bytes a second it may send
	// through it (DefaultRelayRate when zero; below zero, no limit).
	RelayStreams     int
	RelayPairStreams int
	RelayRate        int64
	// RelayRecord, when set, is a folder where each relayed stream's
	// bytes are kept as the relay read them: for tests and audits, which
	// find nothing in them but TLS records.
	RelayRecord string

	// MetricsAddr, when set, is a loopback host:port where /metrics is
	// served (Prometheus text format), on a listener of its own: never on
	// the control plane's own port (metrics.go).
	MetricsAddr string
	// Meter counts requests, heartbeats and relay traffic for /metrics
	// (cpserver.NewMeter); nil counts nothing, and refuses MetricsAddr.
	Meter Meter

	// CertLifetime and SignTime are for tests: how long the certificates
	// it signs last (CertLifetime when zero) and the time they start
	// (now when nil), so that a test can make an expired certificate.
	CertLifetime time.Duration
	SignTime     func() time.Time
}

// Meter is what the control plane counts, and serves at /metrics. The
// Prometheus one is cpserver.NewMeter's, in a package of its own: the st
// binary, which every agent hook starts, must not link client_golang
// (cpserver's doc says why). Without one (nil) nothing is counted and
// --metrics is refused.
type Meter interface {
	Request(account, route, code string)
	Heartbeat(account string)
	RelayStream(account, result string)
	RelayConns(account string) Gauge
	RelayOpen(account string) Gauge
	RelayBytes(account string) Counter
	// Handler serves the text format; machines counts each account's
	// signed-in machines at a scrape.
	Handler(machines func() (map[string]int, error)) http.Handler
}

// Gauge and Counter are aliases, so that a meter of another package
// matches Meter with plain interface types.
type (
	Gauge = interface {
		Inc()
		Dec()
	}
	Counter = interface{ Add(float64) }
)

// Server is a running control plane, as st control-plane serve reports
// it and stops it.
type Server interface {
	// URL is where machines reach it (https://, or http:// with PlainHTTP).
	URL() string
	// CAFile is the control plane's own CA, which machines sign in with
	// (--ca) when its certificate is not a public CA's.
	CAFile() string
	// MetricsURL is where /metrics is served; "" without MetricsAddr.
	MetricsURL() string
	// Shutdown stops it, letting requests under way end until ctx does.
	Shutdown(ctx context.Context) error
}

// Service is the control plane's side of the commands of st
// control-plane: serve, account add, machines and machine remove. Each
// but Start works on the control plane's folder (data) whether or not
// serve runs.
type Service interface {
	Start(opt ServerOptions, listen string) (Server, error)
	// AddAccount adds an account and returns its key, shown this once.
	AddAccount(data, name string) (key string, err error)
	ListMachines(data, account string) ([]remote.Machine, error)
	// RemoveMachine signs a machine out of account and revokes its key.
	RemoveMachine(data, account, name string) (remote.Machine, error)
}
