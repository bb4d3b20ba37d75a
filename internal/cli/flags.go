package cli

// Flags in st's words: one duration flag that refuses what st cannot
// wait (a negative or a too-large duration, with the largest allowed),
// and one place that turns every flag error of cobra's and pflag's into
// a refusal with a Try line.

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sophonz/st/internal/api"
)

// maxFlagDuration is the longest duration a flag takes: a year, longer
// than anyone waits for a worker or a gate, and far from the ~292 years
// where a duration overflows.
const maxFlagDuration = 365 * 24 * time.Hour

// durationValue is a flag of a duration from 0 to maxFlagDuration.
type durationValue struct{ d *time.Duration }

// durationFlag defines the duration flag name on f, as f.DurationVar
// would, refusing negatives and more than maxFlagDuration.
func durationFlag(f *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	f.Var(durationValue{p}, name, usage)
}

func (v durationValue) String() string { return v.d.String() }
func (v durationValue) Type() string   { return "duration" }

func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil && strings.Contains(err.Error(), "invalid duration") && durationShape(s):
		return tooLong()
	case err != nil:
		return &api.Error{Kind: api.KindUsage, Message: "it is not a duration", Hint: "a number and a unit, such as 90s, 15m or 2h"}
	case d < 0:
		return &api.Error{Kind: api.KindUsage, Message: "a duration below zero waits for nothing", Hint: "a duration of 0 or more, such as 90s, 15m or 2h"}
	case d > maxFlagDuration:
		return tooLong()
	}
	*v.d = d
	return nil
}

// tooLong refuses a duration above maxFlagDuration.
func tooLong() error {
	return &api.Error{Kind: api.KindUsage, Message: "it is longer than st takes", Hint: "at most 8760h (a year)"}
}

// durationShape reports whether s is digits and units alone, which
// ParseDuration refuses only when the number is too large.
func durationShape(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return s != "" && strings.Trim(s, "0123456789.hmsuµn") == ""
}

// flagError is the root's FlagErrorFunc (its commands inherit it): a flag
// st does not know, one with no value, or a value it cannot take, said
// in st's words with what to type, never pflag's or Go's words.
func flagError(cmd *cobra.Command, err error) error {
	help := cmd.CommandPath() + " --help lists its flags"
	var (
		inv *pflag.InvalidValueError
		nx  *pflag.NotExistError
		req *pflag.ValueRequiredError
		syn *pflag.InvalidSyntaxError
	)
	switch {
	case errors.As(err, &inv):
		f := inv.GetFlag()
		what := fmt.Sprintf("--%s %s", f.Name, quoteArg(inv.GetValue()))
		var ae *api.Error
		if errors.As(err, &ae) {
			return usageError(what+": "+ae.Message, "give --"+f.Name+" "+ae.Hint)
		}
		return usageError(fmt.Sprintf("%s: it is not %s", what, valueKind(f.Value.Type())), help)
	case errors.As(err, &nx):
		name := nx.GetSpecifiedName()
		if sh := nx.GetSpecifiedShortnames(); sh != "" {
			return usageError(fmt.Sprintf("%s has no flag -%s", cmd.CommandPath(), quoteArg(name)), help+" (a value that starts with '-' goes after --name=)")
		}
		return usageError(fmt.Sprintf("%s has no flag --%s", cmd.CommandPath(), quoteArg(name)), help)
	case errors.As(err, &req):
		return usageError(fmt.Sprintf("--%s needs a value", req.GetFlag().Name), help)
	case errors.As(err, &syn):
		return usageError(fmt.Sprintf("%s is not a flag st can read", quoteArg(syn.GetSpecifiedFlag())), help)
	}
	return usageError(err.Error(), help)
}

// argsError gives cobra's refusals of arguments (a command with no such
// subcommand, or a count of arguments it does not take) a Try line: what
// cmd's help says. Any other error is returned as it is.
func argsError(cmd *cobra.Command, err error) error {
	var ae *api.Error
	if cmd == nil || errors.As(err, &ae) {
		return err
	}
	msg := err.Error()
	for _, p := range []string{"unknown command ", "accepts ", "requires at least ", "requires at most ", "invalid argument "} {
		if strings.HasPrefix(msg, p) {
			return usageError(msg, cmd.CommandPath()+" --help says what it takes")
		}
	}
	return err
}

// valueKind says what a flag of pflag's type t takes.
func valueKind(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "a whole number, such as 3"
	case strings.HasPrefix(t, "float"):
		return "a number, such as 1.5"
	case t == "bool":
		return "true or false"
	}
	return "a value st can read"
}

// quoteArg shows an argument as typed, quoted when it has a space or a
// character that would not show.
func quoteArg(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == '"' || r == '\'' || r > '~' }) {
		return fmt.Sprintf("%+q", s)
	}
	return s
}
