package remote

import (
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/hashicorp/yamux"
)

// The relay's wire, the same at both ends: the first line of each stream
// (relay.go in internal/controlplane tells the protocol) and yamux's
// settings.

// RelayLineMax bounds the first line of a stream.
const RelayLineMax = 1024

// RelayOpen is the first line of a stream a machine opens: where it goes.
type RelayOpen struct {
	To string `json:"to"`
}

// RelayReply is the control plane's answer to a RelayOpen.
type RelayReply struct {
	OK    bool   `json:"ok,omitempty"`
	Error string `json:"error,omitempty"`
	Hint  string `json:"hint,omitempty"`
	// Offline means the machine is not connected to the relay: it cannot
	// be reached now, as opposed to a refusal.
	Offline bool `json:"offline,omitempty"`
}

// RelayIncoming is the first line of a stream the control plane opens on
// a machine: who asked for it (for the log only).
type RelayIncoming struct {
	From string `json:"from"`
}

// YamuxConfig is the multiplexing of a relay connection, the same at
// both ends.
func YamuxConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.LogOutput = io.Discard
	// Below the idle timeouts of the proxies a control plane may sit
	// behind (nginx cuts a quiet websocket at 60 s).
	c.KeepAliveInterval = 20 * time.Second
	c.StreamOpenTimeout = 30 * time.Second
	c.StreamCloseTimeout = time.Minute
	return c
}

// ReadLine reads one line of at most RelayLineMax bytes, a byte at a
// time, so that nothing after it is taken from the stream.
func ReadLine(r io.Reader) ([]byte, error) {
	var line []byte
	b := make([]byte, 1)
	for len(line) < RelayLineMax {
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		if b[0] == '\n' {
			return line, nil
		}
		line = append(line, b[0])
	}
	return nil, errors.New("the relay's first line is too long")
}

// WriteLine writes v as one JSON line.
func WriteLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
