//go:build !unix

package browser

import (
	"errors"
	"log/slog"
	"os/exec"
)

// interposeMux is not done here: chromedp hands Chrome its pipe as handles
// on Windows, which pagemux does not take over. Chrome then talks to
// chromedp alone, and there is no second DevTools connection.
func interposeMux(cmd *exec.Cmd, log *slog.Logger, maxMessage int, cbor bool) (*cdpMux, error) {
	return nil, errors.New("the devtools bridge needs a unix system")
}
