package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/sophonz/st/internal/agent"
	"github.com/sophonz/st/internal/api"
	"github.com/sophonz/st/internal/tokens"
)

// Config is the user's settings, from $ST_HOME/config.toml, with the
// environment taking precedence (ST_TMUX_SOCKET, ST_WEB_PORT, ST_PUSH_URL).
type Config struct {
	// TmuxSocket names the tmux server st drives ("" = the default one).
	TmuxSocket string `toml:"tmux_socket"`
	// WebPort is the web UI's port on 127.0.0.1 (0 = the default, 7766,
	// -1 = any free port, which ST_WEB_PORT=auto also asks for).
	WebPort int `toml:"web_port"`
	// WebPortSet: the port was set on purpose (web_port, ST_WEB_PORT), so
	// a port that is taken is an error; the default gives way to a free
	// port instead (webui.go).
	WebPortSet bool `toml:"-"`
	// PushURL is an ntfy-style HTTP endpoint that gets each open gate.
	PushURL string `toml:"push_url"`
	// PushAnswerURL is where the phone reaches this machine's web UI (a
	// tunnel or reverse proxy to it); with it set, a push carries one
	// answer action per option, each with a one-time answer token.
	// Without it, the push carries the question alone.
	PushAnswerURL string `toml:"push_answer_url"`
	// WebHosts are Host names the web UI answers besides 127.0.0.1,
	// localhost and [::1] (a reverse proxy's name, set on purpose).
	WebHosts []string `toml:"web_hosts"`
	// PeerListen is where this machine also takes requests from the
	// account's other machines directly (mutual TLS), once signed in:
	// host:port, or "off" (the default) for no listener at all. Either
	// way they reach it through the control plane's relay, over the one
	// connection this machine keeps to it; a direct address they can dial
	// (the same network, no NAT between) is only quicker.
	PeerListen string `toml:"peer_listen"`
	// Heartbeat is how often the control plane is told this machine's
	// address (10s unless set; ST_HEARTBEAT).
	Heartbeat Duration `toml:"heartbeat"`
	// PeerRetry is how often st tries again to tell an unreachable
	// machine that a coordinator moved (1m unless set; ST_PEER_RETRY).
	PeerRetry Duration `toml:"peer_retry"`
	// AgentsStartSim lets agents start the sim agent (a test program that
	// runs any command its task names), which st otherwise starts only
	// for a person (ST_AGENTS_START_SIM=1; internal/authz).
	AgentsStartSim bool `toml:"agents_start_sim"`
	// PermissionWait is how long an agent's permission hook waits for a
	// person's answer from the web UI or a push before it leaves the
	// answer to the agent's own dialog (5m unless set, at most 1h;
	// ST_PERMISSION_WAIT; docs/permission-prompts.md).
	PermissionWait Duration `toml:"permission_wait"`
	// Attention is [attention]: which attention items push, and how
	// quietly (attnpush.go).
	Attention AttentionConfig `toml:"attention"`
	// Tokens is the [tokens] table: a default budget for new runs, and the
	// price table st estimates costs from (docs/tokens.md).
	Tokens TokensConfig `toml:"tokens"`
	// Agents are the agents the user describes ([agents.NAME]): read by
	// agent.LoadDescribed; here so that the strict read takes them.
	Agents map[string]agent.Description `toml:"agents"`
	// OnLimitMove is the agent kind that takes over the task of a worker
	// started with --on-limit move when its agent reaches its usage limit
	// ("codex", say; ST_ON_LIMIT_MOVE). Empty: such a worker waits.
	OnLimitMove string `toml:"on_limit_move"`
}

// TokensConfig is config.toml's [tokens].
type TokensConfig struct {
	// Budget is a new run's budget unless st orch start --budget gives
	// one: tokens (500k) or dollars ("$5"); "" for none.
	Budget string `toml:"budget"`
	// Prices is [tokens.prices]: date = "YYYY-MM-DD", and
	// [tokens.prices.models."claude-sonnet-4"] input = 3.0 ... per
	// million tokens.
	Prices tokens.Prices `toml:"prices"`
	// NearLimit is the share of an agent account's usage limit, in
	// percent, from which st status and the web UI say it is near (80
	// unless set).
	NearLimit float64 `toml:"near_limit"`
	// budget is Budget read.
	budget tokens.Budget
}

// DefaultBudget is the budget config.toml gives new runs (zero: none).
func (t TokensConfig) DefaultBudget() tokens.Budget { return t.budget }

// tokensTable checks [tokens]: a price table with its date, a budget st
// can read (a dollar budget only with prices to tell a cost by).
func (c *Config) tokensTable(func(string) string) error {
	if err := c.Tokens.Prices.Check(); err != nil {
		return refuseSetting("config.toml: "+err.Error(), "docs/tokens.md shows a price table")
	}
	if n := c.Tokens.NearLimit; n < 0 || n > 100 || n != n {
		return refuseSetting(fmt.Sprintf("config.toml [tokens]: near_limit = %v is not a share between 1 and 100 (percent)", n), "near_limit = 80")
	}
	if c.Tokens.Budget == "" {
		return nil
	}
	b, err := tokens.ParseBudget(c.Tokens.Budget)
	if err != nil {
		return refuseSetting("config.toml [tokens]: "+err.Error(), `budget = "500k" or budget = "$5"`)
	}
	if b.USD > 0 && len(c.Tokens.Prices.Models) == 0 {
		return refuseSetting("config.toml [tokens]: a dollar budget needs a price table ([tokens.prices]): st knows no prices", `budget = "500k" (tokens), or add [tokens.prices] (docs/tokens.md)`)
	}
	c.Tokens.budget = b
	return nil
}

// agentsStartSim takes ST_AGENTS_START_SIM ("" leaves config.toml's).
func (c *Config) agentsStartSim(v string) error {
	switch v {
	case "":
	case "1", "true":
		c.AgentsStartSim = true
	case "0", "false":
		c.AgentsStartSim = false
	default:
		return refuseSetting(fmt.Sprintf("ST_AGENTS_START_SIM=%q is neither 1 nor 0", v), "ST_AGENTS_START_SIM=1 lets agents start the sim agent, 0 does not")
	}
	return nil
}

// Duration is a time.Duration written as "10s" in config.toml.
type Duration struct{ time.Duration }

// UnmarshalText reads "10s", "1m": a duration above zero (a ticker takes
// no other).
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil || v <= 0 {
		return errors.New("not a duration above zero")
	}
	d.Duration = v
	return nil
}

// DefaultPeerListen is no direct listener: other machines reach this one
// through the control plane's relay. (A loopback address, the old
// default, told the other machines an address that was never theirs to
// dial.)
const DefaultPeerListen = "off"

// DefaultWebPort is the web UI's port unless one is set.
const DefaultWebPort = 7766

// LoadConfig reads home's config.toml and the environment.
func LoadConfig(home string, getenv func(string) string) (Config, error) {
	var c Config
	path := filepath.Join(home, "config.toml")
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return c, fmt.Errorf("read %s: %w", path, err)
	default:
		// Strict: a key st does not know is a setting it would not
		// honour, most often a misspelt one.
		if err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(&c); err != nil {
			return c, configError(path, data, err)
		}
		if c.WebPort < -1 || c.WebPort > 65535 {
			return c, settingError(path, data, "web_port")
		}
	}
	for _, step := range []func(func(string) string) error{c.tmuxAndWeb, c.push, c.agentsAndPeers, c.durations, c.webPort, c.tokensTable} {
		if err := step(getenv); err != nil {
			return c, err
		}
	}
	if err := c.Attention.check(); err != nil {
		return c, err
	}
	return c, nil
}

// refuseSetting is a setting st cannot honour, refused before the daemon
// starts, with what to set instead.
func refuseSetting(msg, hint string) error {
	return &api.Error{Kind: api.KindUsage, Message: msg, Hint: hint}
}

// tmuxAndWeb takes ST_TMUX_SOCKET, ST_WEB_PORT and ST_WEB_HOSTS.
func (c *Config) tmuxAndWeb(getenv func(string) string) error {
	if v := getenv("ST_TMUX_SOCKET"); v != "" {
		c.TmuxSocket = v
	}
	if v := getenv("ST_WEB_PORT"); v == "auto" {
		c.WebPort = -1
	} else if v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 0 || p > 65535 {
			return refuseSetting(fmt.Sprintf("ST_WEB_PORT=%q is not a port number", v), "ST_WEB_PORT=7766 (a port from 1 to 65535), or auto for any free port")
		}
		c.WebPort = p
	}
	c.WebPortSet = c.WebPort > 0
	if v := getenv("ST_WEB_HOSTS"); v != "" {
		c.WebHosts = strings.Split(v, ",")
	}
	return nil
}

// push takes ST_PUSH_URL and ST_PUSH_ANSWER_URL, and checks the answer's.
func (c *Config) push(getenv func(string) string) error {
	if v := getenv("ST_PUSH_URL"); v != "" {
		c.PushURL = v
	}
	if v := getenv("ST_PUSH_ANSWER_URL"); v != "" {
		c.PushAnswerURL = v
	}
	if c.PushAnswerURL != "" {
		u, err := url.Parse(c.PushAnswerURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return refuseSetting(fmt.Sprintf("push_answer_url %q is not an http(s) URL", c.PushAnswerURL), "set push_answer_url (config.toml) or ST_PUSH_ANSWER_URL to a URL such as https://st.example.net")
		}
	}
	return nil
}

// agentsAndPeers takes ST_AGENTS_START_SIM, ST_ON_LIMIT_MOVE and
// ST_PEER_LISTEN.
func (c *Config) agentsAndPeers(getenv func(string) string) error {
	if err := c.agentsStartSim(getenv("ST_AGENTS_START_SIM")); err != nil {
		return err
	}
	if v := getenv("ST_ON_LIMIT_MOVE"); v != "" {
		c.OnLimitMove = v
	}
	if c.OnLimitMove != "" {
		if _, err := agent.Lookup(c.OnLimitMove); err != nil {
			return refuseSetting(fmt.Sprintf("on_limit_move %q is not an agent kind st knows", c.OnLimitMove), "set on_limit_move (config.toml) or ST_ON_LIMIT_MOVE to one of: "+strings.Join(agent.Kinds(), ", "))
		}
	}
	if v := getenv("ST_PEER_LISTEN"); v != "" {
		c.PeerListen = v
	}
	if c.PeerListen == "" {
		c.PeerListen = DefaultPeerListen
	}
	if c.PeerListen != "off" {
		if _, _, err := net.SplitHostPort(c.PeerListen); err != nil {
			return refuseSetting(fmt.Sprintf("peer_listen %q is neither host:port nor off", c.PeerListen), "set peer_listen (config.toml) or ST_PEER_LISTEN to host:port, such as 0.0.0.0:7443, or to off")
		}
	}
	return nil
}

// durations takes ST_HEARTBEAT and ST_PEER_RETRY.
func (c *Config) durations(getenv func(string) string) error {
	for _, d := range []struct {
		env string
		to  *Duration
	}{{"ST_HEARTBEAT", &c.Heartbeat}, {"ST_PEER_RETRY", &c.PeerRetry}, {"ST_PERMISSION_WAIT", &c.PermissionWait}} {
		if v := getenv(d.env); v != "" {
			x, err := time.ParseDuration(v)
			if err != nil || x <= 0 {
				return refuseSetting(fmt.Sprintf("%s=%q is not a duration above zero", d.env, v), d.env+"=10s (s, m or h)")
			}
			d.to.Duration = x
		}
	}
	return nil
}

// webPort settles the web UI's port: the default (which
// ST_WEB_DEFAULT_PORT may move, still giving way when taken: tests point
// it at a port they hold), or any free one for "auto".
func (c *Config) webPort(getenv func(string) string) error {
	switch c.WebPort {
	case 0:
		c.WebPort = DefaultWebPort
		if v := getenv("ST_WEB_DEFAULT_PORT"); v != "" {
			p, err := strconv.Atoi(v)
			if err != nil || p <= 0 || p > 65535 {
				return refuseSetting(fmt.Sprintf("ST_WEB_DEFAULT_PORT=%q is not a port number", v), "ST_WEB_DEFAULT_PORT=7766 (a port from 1 to 65535)")
			}
			c.WebPort = p
		}
	case -1:
		c.WebPort = 0 // the kernel picks a free one
	}
	return nil
}
