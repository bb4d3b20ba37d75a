package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sophonz/st/internal/remote"
	"github.com/spf13/cobra"
)

// newLoginCmd is st login; what a flag does not give comes from the
// environment (ST_CONTROL_PLANE, ST_ACCOUNT, ...).
func newLoginCmd(env *Env, runF runFunc[remote.LoginOptions]) *cobra.Command {
	var o remote.LoginOptions
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Sign this machine in to an account, so the account's machines can reach each other's st",
		Args:  cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&o.URL, "control-plane", "", "the control plane's URL, as st control-plane serve printed it (or $ST_CONTROL_PLANE)")
	f.StringVar(&o.CAFile, "ca", "", "the control plane's CA, the ca.pem in its --data folder (or $ST_CONTROL_PLANE_CA)")
	f.StringVar(&o.Account, "account", "", "the account (or $ST_ACCOUNT)")
	f.StringVar(&o.Key, "key", "", "the account's key (or $ST_ACCOUNT_KEY)")
	f.StringVar(&o.Name, "name", "", "how the account calls this machine (or $ST_MACHINE_NAME; default its host name)")
	f.StringVar(&o.Host, "host", "", "this machine's host name (or $ST_HOSTNAME; default the system's)")
	f.BoolVar(&o.Replace, "replace", false, "take over the name and host of a machine signed in with another key (its key is lost: a new disk, a reinstall); that key is revoked, and st machines on every machine shows it")
	return bind(cmd, env, &o, func([]string) error {
		for v, key := range map[*string]string{&o.URL: "ST_CONTROL_PLANE", &o.CAFile: "ST_CONTROL_PLANE_CA", &o.Account: "ST_ACCOUNT",
			&o.Key: "ST_ACCOUNT_KEY", &o.Name: "ST_MACHINE_NAME", &o.Host: "ST_HOSTNAME"} {
			if *v == "" {
				*v = env.Getenv(key)
			}
		}
		return nil
	}, runF, runLogin)
}

func runLogin(ctx context.Context, env *Env, o remote.LoginOptions) error {
	id, err := remote.Login(ctx, env.Home(), o)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "signed in to account %s as %s (slug %s) until %s\n", id.Account, id.Name, id.Slug, id.Expires.Local().Format("15:04"))
	if id.Formerly != "" {
		fmt.Fprintf(env.Stdout, "this machine was %s before: its name follows its key, so %s is listed no more\n", id.Formerly, id.Formerly)
	}
	if id.Replaced != "" {
		fmt.Fprintf(env.Stdout, "took the name over from key %s, which is revoked now; the account's other machines show %s as replaced\n", id.Replaced, id.Slug)
	}
	fmt.Fprintln(env.Stdout, "The account's other machines start workers here only after: st orch accept-remote on")
	reloadDaemon(ctx, env)
	return nil
}

// reloadDaemon tells this machine's daemon, if one runs, that the
// sign-in changed. It is best effort: a daemon that is down reads the
// sign-in when it starts.
func reloadDaemon(ctx context.Context, env *Env) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, _ = env.RunningClient().ReloadRemote(ctx)
}

type logoutOptions struct{}

func newLogoutCmd(env *Env, runF runFunc[logoutOptions]) *cobra.Command {
	var o logoutOptions
	cmd := &cobra.Command{Use: "logout", Short: "Sign this machine out of its account", Args: cobra.NoArgs}
	return bind(cmd, env, &o, nil, runF, runLogout)
}

func runLogout(ctx context.Context, env *Env, _ logoutOptions) error {
	id, err := remote.LoadIdentity(env.Home())
	if errors.Is(err, remote.ErrNotSignedIn) {
		fmt.Fprintln(env.Stdout, "this machine is not signed in")
		return nil
	}
	if err != nil {
		return err
	}
	err = remote.Logout(ctx, env.Home())
	if err != nil && !errors.Is(err, remote.ErrControlPlaneNotTold) {
		return err
	}
	reloadDaemon(ctx, env)
	if err != nil {
		// Signed out here all the same; the rest is the control plane's list.
		fmt.Fprintf(env.Stderr, "st: %v\n", err)
	}
	fmt.Fprintf(env.Stdout, "signed out of account %s (this machine was %s)\n", id.Account, id.Slug)
	return nil
}
