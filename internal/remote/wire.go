package remote

// The control plane's API as both ends see it: the JSON of its requests
// and answers, and the names it takes. The server is internal/controlplane;
// a machine's side is this package.

// ValidName reports whether s names an account or a machine slug: lower-
// case letters, digits and '-', at most 63, not starting with '-'. (A loop,
// not a regular expression: its counted repeat would compile at every
// start of st.)
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// MaxVersion bounds the st version a heartbeat names.
const MaxVersion = 64

// APIError is what the control plane answers on failure.
type APIError struct {
	Error string `json:"error"`
	Hint  string `json:"hint,omitempty"`
}

// Wire types of the control plane's API: login, renew, heartbeat and
// the list of machines.
type (
	LoginRequest struct {
		Account string `json:"account"`
		Key     string `json:"key"`
		Name    string `json:"name"`
		Host    string `json:"host"`
		CSR     string `json:"csr"`
		// Replace takes over a name and host signed in with another key,
		// revoking that key (st login --replace).
		Replace bool `json:"replace,omitempty"`
	}
	LoginResponse struct {
		Slug      string `json:"slug"`
		Cert      string `json:"cert"`
		AccountCA string `json:"account_ca"`
		// Formerly is this machine's slug before it signed in under a
		// new name; Replaced the fingerprint of the key it took its name
		// over from (--replace).
		Formerly string `json:"formerly,omitempty"`
		Replaced string `json:"replaced,omitempty"`
	}
	CertResponse struct {
		Cert string `json:"cert"`
	}
	HeartbeatRequest struct {
		Addr         string `json:"addr"`
		AcceptRemote bool   `json:"accept_remote"`
		Online       bool   `json:"online"`
		// Version is the machine's st (an st before 0.4 sends none).
		Version string `json:"version,omitempty"`
	}
	HeartbeatResponse struct {
		// Revoked are the account's revoked machine keys, which peers
		// refuse from then on.
		Revoked []Revoked `json:"revoked"`
	}
	MachinesResponse struct {
		Machines []Machine `json:"machines"`
	}
)
