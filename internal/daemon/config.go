package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/pelletier/go-toml/v2"
)

// Config is the user's settings, from $ST_HOME/config.toml, with the
// environment taking precedence (ST_TMUX_SOCKET, ST_WEB_PORT, ST_PUSH_URL).
type Config struct {
	// TmuxSocket names the tmux server st drives ("" = the default one).
	TmuxSocket string `toml:"tmux_socket"`
	// WebPort is the web UI's port on 127.0.0.1 (0 = 7766, -1 = any free
	// port, which ST_WEB_PORT=auto also asks for).
	WebPort int `toml:"web_port"`
	// PushURL is an ntfy-style HTTP endpoint that gets each open gate,
	// with its options as actions.
	PushURL string `toml:"push_url"`
}

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
		if err := toml.Unmarshal(data, &c); err != nil {
			return c, fmt.Errorf("%s is not valid TOML (fix it, or move it away): %w", path, err)
		}
	}
	if v := getenv("ST_TMUX_SOCKET"); v != "" {
		c.TmuxSocket = v
	}
	if v := getenv("ST_WEB_PORT"); v == "auto" {
		c.WebPort = -1
	} else if v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 0 || p > 65535 {
			return c, fmt.Errorf("ST_WEB_PORT=%q is not a port number", v)
		}
		c.WebPort = p
	}
	if v := getenv("ST_PUSH_URL"); v != "" {
		c.PushURL = v
	}
	switch c.WebPort {
	case 0:
		c.WebPort = DefaultWebPort
	case -1:
		c.WebPort = 0 // the kernel picks a free one
	}
	return c, nil
}
