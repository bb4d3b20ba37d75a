// Package api is the wire of st's daemon: the route names, the request
// and response types of every route (a worker, a run, a task as the views
// show them: run.json keeps records of its own, internal/orch record.go;
// a gate, which gates.json keeps as it is), the error type that crosses the
// socket with its kind and hint, and the peer API's types. It imports
// nothing of st, so the client, the CLI, the daemon and orch all speak it
// without importing each other.
package api
