// Package cli is what pagemux's commands share on their command lines
// (pagemux, pagemux smoke, pagemux rules): errors of a flag set in the
// user's own spelling, one line long, with the flag they most likely meant;
// the flags listed GNU style; a repeatable string flag.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/pagemux/pagemux/internal/typo"
)

// ParseInterspersed is ParseArgs of a command line whose flags may come
// before and after its arguments, as users write them (pagemux smoke
// https://a/ --parallel 8 https://b/): it returns the arguments, in
// order, or ParseArgs' error (flag.ErrHelp for --help).
func ParseInterspersed(fs *flag.FlagSet, args []string, usageOut io.Writer) ([]string, error) {
	var out []string
	for {
		if err := ParseArgs(fs, args, usageOut); err != nil {
			return out, err
		}
		if fs.NArg() == 0 {
			return out, nil
		}
		out, args = append(out, fs.Arg(0)), fs.Args()[1:]
	}
}

// ParseArgs is fs.Parse with its errors in the user's own spelling and one
// line long: "unknown flag --paralel: did you mean --parallel?", where the
// flag package would print "flag provided but not defined: -paralel" and
// the whole usage after it. --help still prints the usage (flag.ErrHelp).
func ParseArgs(fs *flag.FlagSet, args []string, usageOut io.Writer) error {
	// The flag package prints the usage on any error, through fs.Usage.
	usage := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(usageOut)
	fs.Usage = usage
	if errors.Is(err, flag.ErrHelp) {
		if usage != nil {
			usage()
		} else {
			fs.PrintDefaults()
		}
		return err
	}
	if err == nil {
		return nil
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		typed := spelled(args, name)
		if near := nearestFlag(fs, name); near != "" {
			return fmt.Errorf("unknown flag %s: did you mean --%s?", typed, near)
		}
		return fmt.Errorf("unknown flag %s; see --help for the flags", typed)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("%s needs a value, such as %s=VALUE", spelled(args, name), spelled(args, name))
	}
	// invalid value "x" for flag -name: parse error
	if i := strings.Index(msg, " for flag -"); i >= 0 && strings.HasPrefix(msg, "invalid ") {
		rest := msg[i+len(" for flag -"):]
		name, why, _ := strings.Cut(rest, ": ")
		return fmt.Errorf("%s: %s (%s)", spelled(args, name), msg[:i], why)
	}
	return err
}

// spelled is how the user wrote flag name among args: --name or -name.
func spelled(args []string, name string) string {
	for _, a := range args {
		if a == "--" {
			break
		}
		bare := strings.TrimLeft(a, "-")
		bare, _, _ = strings.Cut(bare, "=")
		if bare == name && strings.HasPrefix(a, "-") {
			dashes := a[:len(a)-len(strings.TrimLeft(a, "-"))]
			return dashes + name
		}
	}
	return "--" + name
}

// nearestFlag is the defined flag closest to name, "" when none is close
// enough to be what was meant (typo.Nearest).
func nearestFlag(fs *flag.FlagSet, name string) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return typo.Nearest(strings.ToLower(name), names, 0)
}

// PrintFlags lists the flags GNU style, with two dashes, as the README does.
func PrintFlags(fs *flag.FlagSet, w io.Writer) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			def = fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n      %s%s\n", line, usage, def)
	})
}

// Repeated is a string flag that may be given more than once; each value
// is kept, in order.
type Repeated []string

func (r *Repeated) String() string     { return strings.Join(*r, " ") }
func (r *Repeated) Set(v string) error { *r = append(*r, v); return nil }
