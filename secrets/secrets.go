// Package secrets keeps values an agent may type but never read: passwords
// and tokens from a dotenv file (--secrets). An agent names a secret as
// ${NAME} in the arguments of the tools that type or store values, and
// pagemux puts the value in (Set.Expand); every answer, log line and file
// pagemux writes shows ${NAME} where the value, or a common encoding of it,
// would be (Masker.Mask).
//
// It knows nothing of MCP or Chrome.
package secrets

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/pagemux/pagemux/internal/jsonstr"
)

// MinLength is the shortest value a secret may have: a shorter one would
// be masked wherever those few characters happen to appear.
const MinLength = 4

// Set is the secrets of one file, by name. The zero value (and nil) has
// none.
type Set struct {
	source string // the file, for errors
	values map[string]string
}

// name is a secret's name as a file and ${NAME} spell it.
var name = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Load reads a dotenv file: NAME=value lines, # comments and blank lines,
// an optional "export " before a name, values bare (trailing spaces and a
// " #comment" dropped), in single quotes (as written) or in double quotes
// (\n, \t, \" and \\ escapes). Nothing is expanded: a $ in a password is a
// $. Errors name the file and line, never a value.
func Load(path string) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("secrets file: %w", err)
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads a dotenv text as Load does; source names it in errors.
func Parse(r io.Reader, source string) (*Set, error) {
	s := &Set{source: source, values: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !name.MatchString(k) {
			return nil, fmt.Errorf("%s:%d: want NAME=value, with a NAME of letters, digits and _ (such as GITHUB_PASSWORD=…)", source, n)
		}
		val, err := value(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%s:%d (%s): %v", source, n, k, err)
		}
		if len(val) < MinLength {
			return nil, fmt.Errorf("%s:%d (%s): a secret needs at least %d characters, or masking it would hide every place they appear", source, n, k, MinLength)
		}
		if _, dup := s.values[k]; dup {
			return nil, fmt.Errorf("%s:%d: %s is given twice", source, n, k)
		}
		s.values[k] = val
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return s, nil
}

// value reads the value part of a line.
func value(v string) (string, error) {
	switch {
	case strings.HasPrefix(v, "'"):
		end := strings.IndexByte(v[1:], '\'')
		if end < 0 {
			return "", fmt.Errorf("the single quote is not closed")
		}
		return v[1 : end+1], trailing(v[end+2:])
	case strings.HasPrefix(v, `"`):
		var b strings.Builder
		for i := 1; i < len(v); i++ {
			switch c := v[i]; c {
			case '"':
				return b.String(), trailing(v[i+1:])
			case '\\':
				if i+1 == len(v) {
					return "", fmt.Errorf("the double quote is not closed")
				}
				i++
				switch v[i] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				default:
					b.WriteByte(v[i])
				}
			default:
				b.WriteByte(c)
			}
		}
		return "", fmt.Errorf("the double quote is not closed")
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v), nil
}

// trailing checks what follows a quoted value: nothing but a comment.
func trailing(rest string) error {
	rest = strings.TrimSpace(rest)
	if rest != "" && !strings.HasPrefix(rest, "#") {
		return fmt.Errorf("text after the closing quote")
	}
	return nil
}

// Names lists the secrets' names, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	names := make([]string, 0, len(s.values))
	for k := range s.values {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Len is how many secrets s has.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.values)
}

// reference is ${NAME} in an argument; $${ is a literal ${.
var reference = regexp.MustCompile(`\$?\$\{([^}]*)\}`)

// Expand puts the values of the ${NAME} references in v, and the value of
// NAME when v is a secret's name and bare is set (a field that holds one
// value, such as fill's value). $${NAME} stays the text ${NAME}. A
// reference to a name s lacks is an error listing the names it has.
func (s *Set) Expand(v string, bare bool) (string, error) {
	if s.Len() == 0 {
		return v, nil
	}
	if val, ok := s.values[v]; ok && bare {
		return val, nil
	}
	if !strings.Contains(v, "${") {
		return v, nil
	}
	var missing string
	out := reference.ReplaceAllStringFunc(v, func(m string) string {
		if strings.HasPrefix(m, "$$") {
			return m[1:]
		}
		n := m[2 : len(m)-1]
		val, ok := s.values[n]
		if !ok && missing == "" {
			missing = n
		}
		return val
	})
	if missing != "" {
		return "", fmt.Errorf("no secret %q: the secrets this agent has are %s (write $${%s} to type the text ${%s} itself)",
			missing, strings.Join(s.Names(), ", "), missing, missing)
	}
	return out, nil
}

// Masker hides the values of some sets. It is safe for concurrent use; nil
// masks nothing.
type Masker struct {
	r *strings.Replacer
}

// NewMasker hides every value of sets, and the forms a page or a protocol
// may give it (forms), each as ${NAME}. It hides a value's prefixes of
// MinPrefix characters or more too: a page that echoes each key typed
// shows them one after another. Nil when there is nothing to hide.
func NewMasker(sets ...*Set) *Masker {
	type pair struct{ from, to string }
	var pairs []pair
	seen := map[string]bool{}
	for _, s := range sets {
		for _, n := range s.Names() {
			for _, v := range prefixes(s.values[n]) {
				for _, form := range forms(v) {
					if len(form) >= MinLength && !seen[form] {
						seen[form] = true
						pairs = append(pairs, pair{form, "${" + n + "}"})
					}
				}
			}
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	// strings.Replacer tries its old strings in argument order at each
	// position: longest first, so a value is hidden whole rather than as
	// its prefix, and a secret that holds another whole.
	slices.SortStableFunc(pairs, func(a, b pair) int { return len(b.from) - len(a.from) })
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.from, p.to)
	}
	return &Masker{r: strings.NewReplacer(args...)}
}

// MaskerOf is NewMasker of a common set and sets by name (an agent's),
// in the order of their names: where two secrets share a value, the same
// name shows in every run.
func MaskerOf(common *Set, byName map[string]*Set) *Masker {
	sets := []*Set{common}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		sets = append(sets, byName[name])
	}
	return NewMasker(sets...)
}

// MinPrefix is the shortest prefix of a value that Mask hides. Shorter
// ones are too common in text (a password's "pass") to hide without
// garbling answers; a page that echoes each key typed may show them.
const MinPrefix = 6

// prefixes are v and its prefixes of MinPrefix characters or more.
func prefixes(v string) []string {
	out := []string{v}
	rs := []rune(v)
	for n := len(rs) - 1; n >= MinPrefix; n-- {
		out = append(out, string(rs[:n]))
	}
	return out
}

// forms are the spellings of v that Mask hides: as it is, escaped for a
// URL's query (Go's and HTML forms' + for a space, and JavaScript's
// encodeURIComponent %20) and path, in a JSON string and HTML text, its
// UTF-8 read as Latin-1 (as Chrome reads an HTTP header), and in base64.
func forms(v string) []string {
	q := url.QueryEscape(v)
	return []string{v, q, strings.ReplaceAll(q, "+", "%20"), url.PathEscape(v), jsonInner(v, true), jsonInner(v, false), html.EscapeString(v),
		latin1(v), base64.StdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v))}
}

// latin1 is v's UTF-8 bytes read one character each.
func latin1(v string) string {
	rs := make([]rune, len(v))
	for i := range len(v) {
		rs[i] = rune(v[i])
	}
	return string(rs)
}

// jsonInner is v in a JSON string, without its quotes.
func jsonInner(v string, escapeHTML bool) string {
	q := jsonstr.Quote(v, escapeHTML)
	return q[1 : len(q)-1]
}

// Mask returns text with every secret shown as ${NAME}.
func (m *Masker) Mask(text string) string {
	if m == nil {
		return text
	}
	return m.r.Replace(text)
}

// MaskBytes is Mask for a file's contents: text only, as a secret in a
// binary (an image) cannot be told from its bytes.
func (m *Masker) MaskBytes(data []byte) []byte {
	if m == nil || !isText(data) {
		return data
	}
	return []byte(m.r.Replace(string(data)))
}

// isText reports whether data looks like text: no NUL byte in its first
// 8 KiB, as git and grep tell binaries.
func isText(data []byte) bool {
	return !bytes.Contains(data[:min(len(data), 8<<10)], []byte{0})
}
