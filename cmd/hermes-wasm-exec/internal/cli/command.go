package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-agent/hermes-wasm-exec/config"
	"github.com/hermes-agent/hermes-wasm-exec/runtime/executor"
)

// Command describes one subcommand for its own help (`hermes-wasm-exec
// CMD --help`, `hermes-wasm-exec help CMD`) and parses its flags: every
// command's flags take the same forms, and a bad one gets the same short
// error.
//
// A flag's usage string starts with its value's name in backquotes
// ("`SECONDS` wall-clock limit"); a flag without one is a switch. Flags
// are listed in the order of Order, then the rest by name.
type Command struct {
	Name     string   // "run", "packages install"
	Args     string   // what follows the flags in the synopsis: "SCRIPT.py|-"
	Summary  string   // what the command does: a few lines
	Examples []string // shell lines, each run as written
	Notes    string   // after the flags
	Order    []string // flags listed first, in this order
}

// FlagSet returns a flag set for c: it prints nothing itself (Parse
// does).
func (c *Command) FlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// Parse parses args, whose flags may come before or after the positional
// arguments. With -h or --help it prints c's help to stdout and returns
// ok false and ExitOK; on a bad flag it prints a short error (the flag, the
// value, the accepted form, and where the help is) to stderr and returns
// ok false and ExitUsage.
func (c *Command) Parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	pos, err := ParseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		c.Help(fs, stdout)
		return nil, ExitOK, false
	}
	if err != nil {
		return nil, c.Fail(stderr, "%s", flagError(err)), false
	}
	return pos, ExitOK, true
}

// Fail prints a usage error of c and where its help is, and returns
// ExitUsage.
func (c *Command) Fail(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "hermes-wasm-exec %s: %s\nsee: hermes-wasm-exec %s --help\n", c.Name, fmt.Sprintf(format, a...), c.Name)
	return ExitUsage
}

// NoArgs refuses positional arguments (for a command that takes only
// flags): ExitUsage after saying so, or ExitOK.
func (c *Command) NoArgs(pos []string, stderr io.Writer) int {
	if len(pos) > 0 {
		return c.Fail(stderr, "unexpected argument %q (%s takes only flags)", pos[0], c.Name)
	}
	return ExitOK
}

var (
	reInvalid   = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-([^:]+): (.*)$`)
	reUndefined = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	reNeedsArg  = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
)

// flagError rewrites an error of the flag package with the flag's name
// as users type it (--name) and the accepted form.
func flagError(err error) string {
	msg := err.Error()
	if m := reInvalid.FindStringSubmatch(msg); m != nil {
		why := m[3]
		if why == "parse error" {
			why = "give true or false"
		}
		return fmt.Sprintf("--%s %q: %s", m[2], m[1], why)
	}
	if m := reUndefined.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("unknown flag --%s", m[1])
	}
	if m := reNeedsArg.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("--%s needs a value", m[1])
	}
	return msg
}

// Help writes c's help: synopsis, summary, flags, notes and examples.
func (c *Command) Help(fs *flag.FlagSet, w io.Writer) {
	var b strings.Builder
	synopsis := "hermes-wasm-exec " + c.Name
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		synopsis += " [flags]"
	}
	if c.Args != "" {
		synopsis += " " + c.Args
	}
	fmt.Fprintf(&b, "usage: %s\n\n%s\n", synopsis, strings.TrimSpace(c.Summary))
	if hasFlags {
		b.WriteString("\nflags:\n")
		for _, f := range c.ordered(fs) {
			value, usage := flagUsage(f)
			left := "  --" + f.Name
			if value != "" {
				left += " " + value
			}
			if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "0s" && def != "[]" && !strings.Contains(usage, "default") {
				usage += " (default " + def + ")"
			}
			lines := wrap(usage, 78-28)
			if len(left) > 26 {
				fmt.Fprintf(&b, "%s\n", left)
				left = ""
			}
			for i, l := range lines {
				if i > 0 {
					left = ""
				}
				fmt.Fprintf(&b, "%-28s%s\n", left, l)
			}
		}
		b.WriteString("  -h, --help                this help\n")
	}
	if c.Notes != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(c.Notes))
	}
	if len(c.Examples) > 0 {
		b.WriteString("\nexamples:\n")
		for _, e := range c.Examples {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	io.WriteString(w, b.String())
}

// ordered lists fs's flags: those of c.Order first, then the rest by name.
func (c *Command) ordered(fs *flag.FlagSet) []*flag.Flag {
	rank := map[string]int{}
	for i, n := range c.Order {
		rank[n] = i + 1
	}
	var all []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { all = append(all, f) })
	sort.SliceStable(all, func(i, j int) bool {
		ri, rj := rank[all[i].Name], rank[all[j].Name]
		switch {
		case ri != 0 && rj != 0:
			return ri < rj
		case ri != 0 || rj != 0:
			return ri != 0
		}
		return all[i].Name < all[j].Name
	})
	return all
}

// flagUsage splits a usage string into the value's name (in backquotes
// at its start) and the description.
func flagUsage(f *flag.Flag) (value, usage string) {
	u := f.Usage
	if strings.HasPrefix(u, "`") {
		if end := strings.Index(u[1:], "`"); end >= 0 {
			return u[1 : end+1], strings.TrimSpace(u[end+2:])
		}
	}
	return "", u
}

// wrap splits s into lines of at most width runes, at spaces.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = word
			continue
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

// DurationFlag is a flag.Value for a duration given as seconds ("30",
// "2.5") or as a Go duration ("90s", "2m", "1h30m"): every duration flag of
// the program takes both. Negative durations are refused.
type DurationFlag struct{ D *time.Duration }

func (d DurationFlag) String() string {
	if d.D == nil {
		return ""
	}
	return d.D.String()
}

// Set parses s.
func (d DurationFlag) Set(s string) error {
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d.D = v
	return nil
}

// ParseDuration parses seconds ("30", "2.5") or a Go duration ("90s",
// "2m"); negative values are refused.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f > float64(1<<62)/float64(time.Second) {
			return 0, errors.New("too long")
		}
		d = time.Duration(f * float64(time.Second))
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, errors.New("give seconds (30, 2.5) or a duration (90s, 2m, 1h30m)")
	}
	if d < 0 {
		return 0, errors.New("must not be negative")
	}
	return d, nil
}

// EnumFlag is a flag.Value that takes one of Allowed, in any case
// (--mode Strict is strict): every choice flag of the program follows that
// one rule.
type EnumFlag struct {
	V       *string
	Allowed []string
}

func (e EnumFlag) String() string {
	if e.V == nil {
		return ""
	}
	return *e.V
}

// Set checks s against Allowed, case-insensitively, and keeps the allowed
// spelling.
func (e EnumFlag) Set(s string) error {
	for _, a := range e.Allowed {
		if strings.EqualFold(strings.TrimSpace(s), a) {
			*e.V = a
			return nil
		}
	}
	return fmt.Errorf("give %s%s", orList(e.Allowed), config.DidYouMean(strings.ToLower(strings.TrimSpace(s)), e.Allowed))
}

// IntFlag is a flag.Value for a whole number of at least Min.
type IntFlag struct {
	N   *int
	Min int
}

func (i IntFlag) String() string {
	if i.N == nil {
		return ""
	}
	return strconv.Itoa(*i.N)
}

// Set parses s.
func (i IntFlag) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < i.Min {
		return fmt.Errorf("give a whole number of %d or more", i.Min)
	}
	*i.N = n
	return nil
}

// orList is "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// CheckWorkdir is the one rule of every front end for a working dir
// (executor.ResolveWorkdir's): "" when dir can be used, else what to do,
// naming the flag that sets it.
func CheckWorkdir(dir string) string {
	if _, err := executor.ResolveWorkdir(dir); err != nil {
		return err.Error() + " with --workdir"
	}
	return ""
}
