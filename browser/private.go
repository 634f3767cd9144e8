package browser

import (
	"path/filepath"
	"regexp"
	"strings"
)

// This file names the directories that are Chrome's own and that no file path
// given by an agent may reach: a profile holds the cookie database, saved
// passwords and the DevTools port file. It does not enforce anything: the
// callers that check paths (tools' workspace) do.

// ProfileDirs returns the profile directories of this Browser's Chrome: the
// one given with Config.UserDataDir and the temporary one of the current
// launch, as far as they are known now (the temporary one only once Chrome
// was started). An attached Chrome's profile is not known.
func (b *Browser) ProfileDirs() []string {
	var dirs []string
	if b.cfg.UserDataDir != "" {
		dirs = append(dirs, b.cfg.UserDataDir)
	}
	b.mu.Lock()
	l := b.members[0].launch
	b.mu.Unlock()
	if l != nil {
		select {
		case <-l.done:
			if l.profileDir != "" {
				dirs = append(dirs, l.profileDir)
			}
		default: // profileDir is written until done closes
		}
	}
	return dirs
}

// chromeTempName matches the names Chrome and chromedp give what they make in
// a temp dir: chromedp-runner* profiles, Chrome's shared-memory and scratch
// files (.org.chromium.Chromium.*, .com.google.Chrome.*).
var chromeTempName = regexp.MustCompile(`^(chromedp-runner|\.org\.chromium\.|\.com\.google\.Chrome)|^(org\.chromium\.Chromium|com\.google\.(Chrome|chrome)[A-Za-z.]*)\.[A-Za-z0-9]{6}$`)

// IsPrivateName reports whether name, one element of a path, is what pagemux
// or Chrome name their private directories in a temp dir: a pagemux
// temporary profile (pagemux-<pid>-<hex>, of this or any other pagemux),
// Chrome's singleton directory (org.chromium.Chromium.XXXXXX …), chromedp's
// profiles and Chrome's scratch files.
func IsPrivateName(name string) bool {
	return profileName.MatchString(name) || chromeTempName.MatchString(name)
}

// Within reports whether path is dir or lies inside it; both must be clean
// absolute paths.
func Within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}
