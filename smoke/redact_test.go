package smoke

import (
	"net/http"
	"slices"
	"testing"
)

// The run's secrets: header and cookie values, the password of
// --basic-auth, a storage state's cookies and its token-like localStorage
// values, fills from $VAR; longest first, so that a secret inside another
// is not cut in two.
func TestSmokeSecretsOf(t *testing.T) {
	t.Parallel()
	o := &Options{
		Headers: http.Header{"Authorization": {"Basic Y2k6cGE1NS13b3Jk"}, "X-Token": {"t0ken"}, "X-Short": {"ab"}},
		Cookies: [][2]string{{"session", "c00kie"}},
		StorageState: &StorageState{
			Cookies: []StateCookie{{Name: "sid", Value: "st4te-cookie"}},
			Origins: []StateOrigin{{LocalStorage: []StateItem{{Name: "theme", Value: "dark"}, {Name: "jwt", Value: "eyJhbGciOi"}}}},
		},
		Login: []Step{{Kind: stepFill, Value: "pw", Secret: true}, {Kind: stepFill, Value: "ci"}},
	}
	want := []string{"Basic Y2k6cGE1NS13b3Jk", "st4te-cookie", "eyJhbGciOi", "pa55-word", "c00kie", "t0ken", "pw"}
	if got := secretsOf(o); !slices.Equal(got, want) {
		t.Errorf("secrets %q, want %q", got, want)
	}
	k := &checker{secrets: secretsOf(o)}
	p := &Page{FinalURL: "https://a.test/?q=pa55-word"}
	p.check(checkSteps).add(Error, "still at https://a.test/?pw=pa55-word&t=t0ken")
	k.redact(p)
	if p.FinalURL != "https://a.test/?q=***" || p.Checks[0].Problems[0].Message != "still at https://a.test/?***=***&t=***" {
		t.Errorf("redacted: %q, %q", p.FinalURL, p.Checks[0].Problems[0].Message)
	}
}
