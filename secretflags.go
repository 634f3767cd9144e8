package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/pagemux/pagemux/internal/cli"
	"github.com/pagemux/pagemux/secrets"
)

// secretsConfig is what --secrets and --agent-secrets say.
type secretsConfig struct {
	file       string
	agentFiles cli.Repeated
	// all is --secrets as read; byToken are --agent-secrets' by token name.
	all     *secrets.Set
	byToken map[string]*secrets.Set
}

// addSecretFlags registers --secrets and --agent-secrets on fs.
func addSecretFlags(fs *flag.FlagSet, c *secretsConfig) {
	fs.StringVar(&c.file, "secrets", "", "values agents may type but never see, from a dotenv `FILE` (NAME=value lines): an agent writes ${NAME} in fill, fill_form, type_text, handle_dialog's promptText, cookie and storage values and route bodies, and every answer, log and file pagemux writes shows ${NAME} where the value would be")
	fs.Var(&c.agentFiles, "agent-secrets", "with --http, the secrets of the agents of one --auth-token, as `NAME=FILE` (dotenv): they name these instead of --secrets'; repeatable. Every agent's values are masked for all")
}

// load reads the files, after the tokens: an --agent-secrets NAME must be
// an --auth-token's.
func (c *secretsConfig) load(tokens map[string]string) error {
	if c.file != "" {
		s, err := secrets.Load(c.file)
		if err != nil {
			return fmt.Errorf("--secrets: %w", err)
		}
		c.all = s
	}
	for _, arg := range c.agentFiles {
		name, file, ok := strings.Cut(arg, "=")
		if !ok || name == "" || file == "" {
			return fmt.Errorf("--agent-secrets %q: want NAME=FILE, the NAME of an --auth-token and a dotenv file", arg)
		}
		if _, known := tokens[name]; !known {
			return fmt.Errorf("--agent-secrets %s=…: %q names no --auth-token; give the NAME of one (--auth-token %s=SECRET)", name, name, name)
		}
		if _, dup := c.byToken[name]; dup {
			return fmt.Errorf("--agent-secrets: %s is given twice", name)
		}
		s, err := secrets.Load(file)
		if err != nil {
			return fmt.Errorf("--agent-secrets %s: %w", name, err)
		}
		if c.byToken == nil {
			c.byToken = map[string]*secrets.Set{}
		}
		c.byToken[name] = s
	}
	return nil
}

// masker hides every value the flags give, as tools.New's does.
func (c *secretsConfig) masker() *secrets.Masker {
	return secrets.MaskerOf(c.all, c.byToken)
}
