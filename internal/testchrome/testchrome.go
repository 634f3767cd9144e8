// Package testchrome names the Chrome for the tests that need the full
// browser.
//
// scripts/test runs most tests on Debian's chromium-headless-shell (Chrome's
// old headless mode, as Playwright runs headless Chromium): it costs less
// than half the CPU of the full Chrome, which decides whether the suite fits
// a 2-CPU machine (issue 16). It sets $CHROME_PATH to the shell, which
// browser.Config.ResolveExecPath takes first, and $PAGEMUX_FULL_CHROME to the
// full Chrome that pagemux's users run. A test of what only the full Chrome
// does (its singleton socket, tabs in one window, chrome:// pages, favicons,
// the --screen-info window) launches Full.
package testchrome

import "os"

// Env is the variable that names the full Chrome.
const Env = "PAGEMUX_FULL_CHROME"

// Full returns the full Chrome's path for browser.Config.ExecPath: $Env,
// else "", which lets the browser package pick as it does for users (then
// the whole run is on one Chrome, as `go test` alone runs it).
func Full() string {
	return os.Getenv(Env)
}
