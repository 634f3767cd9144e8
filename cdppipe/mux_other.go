//go:build !unix

package cdppipe

import (
	"errors"
	"os/exec"
)

// Interpose is not done here: chromedp hands Chrome its pipe as handles
// on Windows, which pagemux does not take over. Chrome then talks to
// chromedp alone, and there is no second DevTools connection.
func Interpose(cmd *exec.Cmd, opts Options) (*Mux, error) {
	return nil, errors.New("the devtools bridge needs a unix system")
}
