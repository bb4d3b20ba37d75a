// Package api is the wire of st's daemon: the route names, the request
// and response types of every route (the records kept in run.json among
// them: a worker, a run, a task, a gate), the error type that crosses the
// socket with its kind and hint, and the peer API's types. It imports
// nothing of st, so the client, the CLI, the daemon and orch all speak it
// without importing each other.
package api
