// Package controlplane is st's account service, the server that
// st-control-plane runs (st control-plane serve): it keeps each account's
// CA and signs its machines' certificates (ca.go, signin.go), keeps
// accounts, machines and revoked keys in SQLite (cpdb.go, and cpimport.go
// for the JSON state of old), takes heartbeats and lists the machines
// (machineapi.go), relays between machines that cannot dial each other
// (relay.go), checks a machine's signed proof behind a TLS terminator
// (auth.go) and serves /metrics (metrics.go).
//
// A machine's side (sign-in, transport, relay client) is internal/remote,
// and what both sides speak is defined there; this package imports it,
// never the other way. The st binary links none of this package: st
// control-plane runs st-control-plane (internal/cli TestImports), and the
// SQLite driver and Prometheus's client are in cpserver, which only
// st-control-plane and tests link.
//
// The tests here run a control plane and real machines' sign-ins against
// it (internal/remote's API) in one process.
package controlplane
