package smoke

import (
	"cmp"
	"encoding/base64"
	"slices"
	"strings"
)

// A secret given to the run can come back in what a page did with it: a
// form sent with GET puts the password typed into it in the URL a step
// then names, a page echoes a token in an error. So every message of a
// page is cleaned of the run's secrets before anything shows it.

// redacted is what a secret becomes in a message.
const redacted = "***"

// Shortest values taken for secrets, by where they come from: a value the
// user marked as one (a fill's $VAR, a header, a cookie) counts from three
// characters; a storage state's localStorage holds settings too ("dark",
// "true"), so only values that look like tokens count there.
const (
	minSecret      = 3
	minStoredToken = 8
)

// secretsOf are the values no output may show, longest first.
func secretsOf(o *Options) []string {
	var out []string
	add := func(v string, least int) {
		if len(v) >= least && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, vs := range o.Headers {
		for _, v := range vs {
			add(v, minSecret)
			if cred, ok := strings.CutPrefix(v, "Basic "); ok {
				if b, err := base64.StdEncoding.DecodeString(cred); err == nil {
					_, pass, _ := strings.Cut(string(b), ":")
					add(pass, minSecret)
				}
			}
		}
	}
	for _, c := range o.Cookies {
		add(c[1], minSecret)
	}
	if st := o.StorageState; st != nil {
		for _, c := range st.Cookies {
			add(c.Value, minSecret)
		}
		for _, or := range st.Origins {
			for _, it := range or.LocalStorage {
				add(it.Value, minStoredToken)
			}
		}
	}
	steps := slices.Clone(o.Login)
	if o.Steps != nil {
		steps = append(steps, o.Steps.All...)
		for _, ps := range o.Steps.Pages {
			steps = append(steps, ps...)
		}
	}
	for _, s := range steps {
		if s.Secret {
			add(s.Value, 1)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}

// redact replaces the run's secrets in the page's messages.
func (k *checker) redact(p *Page) {
	if len(k.secrets) == 0 {
		return
	}
	clean := func(s string) string {
		for _, v := range k.secrets {
			s = strings.ReplaceAll(s, v, redacted)
		}
		return s
	}
	p.FinalURL = clean(p.FinalURL)
	for _, c := range p.Checks {
		c.Note, c.Summary = clean(c.Note), clean(c.Summary)
		for i := range c.Problems {
			c.Problems[i].Message = clean(c.Problems[i].Message)
		}
	}
}
