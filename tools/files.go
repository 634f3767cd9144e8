package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/pagemux/pagemux/agents"
	"github.com/pagemux/pagemux/browser"
	"github.com/pagemux/pagemux/secrets"
)

// The workspace is where file paths given to tools (uploads, screenshots,
// saved bodies, traces, heap snapshots, reports) may lead, so that an agent,
// or a page steering it, cannot make pagemux read or write elsewhere:
//
//   - With --workspace DIR (Options.Workspaces): those directories, and
//     not the client's roots (the operator chose); over HTTP each agent gets
//     DIR/<agent-key>/ of its own instead.
//   - Else, one client (stdio): the roots its MCP client offers (roots/list,
//     asked again after notifications/roots/list_changed) and the OS temp dir,
//     as chrome-devtools-mcp does. Never the working directory.
//   - Else, over HTTP: a directory of the agent's own,
//     $TMPDIR/pagemux-files-<pid>-<random>/<agent-key>/ (mode 0700), removed when
//     pagemux exits (Server.Close). Files saved under --workspace are kept.
//
// A relative path lands in the first of these. Whatever a root allows,
// Chrome's profiles (the launched one, --user-data-dir, any pagemux-<pid>-*
// and Chrome's own directories in a temp dir) and the directories of other
// agents (pagemux-files-*) are refused, symlinks resolved.

// filesPrefix starts the name of the directory of the agents of one pagemux
// serving HTTP without --workspace: pagemux-files-<pid>-<random>.
const filesPrefix = "pagemux-files-"

// rootsWait bounds how long a call waits for its client to list its roots.
const rootsWait = 5 * time.Second

// workspace holds the roots file paths must lie in, and how to find the
// roots of one call. It does not read or write files other than through
// write, nor watch them.
type workspace struct {
	given    []string // --workspace dirs: absolute, cleaned, symlinks resolved
	temp     string   // the OS temp dir, resolved
	cwd      string   // the working directory, resolved; "" if unknown
	profiles func() []string
	agentOf  func(context.Context) (agents.Agent, bool)
	agentsOn bool              // calls come with agents (HTTP)
	mcp      *server.MCPServer // asks clients for their roots
	masker   *secrets.Masker   // hides the agents' secrets in what write saves

	mu      sync.Mutex
	base    string              // made pagemux-files-<pid>-<random>; "" until then
	clients map[string][]string // the roots of stdio clients, by session id
}

// newWorkspace checks the given roots; none means the defaults above.
// Roots that do not exist, or lie in a Chrome profile, are dropped with an
// error that says so.
func newWorkspace(dirs []string, profiles func() []string) (*workspace, error) {
	w := &workspace{profiles: profiles, temp: resolved(os.TempDir()),
		agentOf: func(context.Context) (agents.Agent, bool) { return agents.Agent{}, false }}
	if wd, err := os.Getwd(); err == nil {
		w.cwd = resolved(wd)
	}
	var errs []error
	var missing []string
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			missing = append(missing, d)
			continue
		}
		if err := checkRoot(abs, profiles()); err != nil {
			errs = append(errs, err)
			continue
		}
		w.given = append(w.given, abs)
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("workspace roots not found, ignored: %s", strings.Join(missing, ", ")))
	}
	if len(dirs) > 0 && len(w.given) == 0 {
		// Given, but none usable: refuse every path rather than fall back.
		w.given = []string{}
	}
	return w, errors.Join(errs...)
}

// CheckWorkspaces refuses --workspace directories that lie in a Chrome
// profile (userDataDir, or a temporary one), so that pagemux does not start
// with a workspace an agent could read cookies and saved passwords from. A
// profile inside a workspace is allowed: paths into it are refused one by
// one.
func CheckWorkspaces(dirs []string, userDataDir string) error {
	var profiles []string
	if userDataDir != "" {
		profiles = append(profiles, resolved(userDataDir))
	}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return fmt.Errorf("--workspace %s: %w", d, err)
		}
		if err := checkRoot(resolved(abs), profiles); err != nil {
			return err
		}
	}
	return nil
}

// checkRoot refuses a root inside a Chrome profile.
func checkRoot(root string, profiles []string) error {
	for _, p := range profiles {
		if p = resolved(p); browser.Within(root, p) {
			return fmt.Errorf("--workspace %s lies inside Chrome's profile %s, where agents could read its cookies and saved passwords: give a directory outside it (a profile inside a workspace is fine: pagemux refuses paths into it)", root, p)
		}
	}
	for _, name := range strings.Split(root, string(filepath.Separator)) {
		if browser.IsPrivateName(name) {
			return fmt.Errorf("--workspace %s lies inside a directory of Chrome or of a pagemux Chrome profile (%s): give a directory of your own", root, name)
		}
	}
	return nil
}

// resolved returns path absolute and cleaned, with its symlinks resolved
// as far as it exists.
func resolved(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// fileScope is the roots one call may use.
type fileScope struct {
	roots []string // the first is where relative paths go
	// agentDirs says the roots are the agent's own directories (HTTP).
	agentDirs bool
	// tempDefault is the default temp root (stdio, no --workspace), inside
	// which the working directory is refused.
	tempDefault string
}

// scopeOf returns the roots of the call in ctx.
func (w *workspace) scopeOf(ctx context.Context) (fileScope, error) {
	if a, ok := w.agentOf(ctx); ok {
		return w.agentScope(a)
	}
	if w.given != nil {
		return fileScope{roots: w.given}, nil
	}
	return fileScope{roots: append(w.clientRoots(ctx), w.temp), tempDefault: w.temp}, nil
}

// agentKey names the directory of agent id: a digest, since a session id is
// a secret of its client and agent names are the client's choice. 128 bits,
// so that no one finds a name of their own with another agent's key.
func agentKey(id string) string {
	sum := sha256.Sum256([]byte("pagemux files\x00" + id))
	return "agent-" + hex.EncodeToString(sum[:16])
}

// agentScope returns the directories of agent a, made 0700 if missing.
func (w *workspace) agentScope(a agents.Agent) (fileScope, error) {
	if !a.Named() {
		return fileScope{}, &argError{"this call carries neither a session nor a token, so pagemux cannot tell whose directory its files belong in: connect with a session (Mcp-Session-Id) or a token to use file paths"}
	}
	bases := w.given
	if bases == nil {
		base, err := w.filesBase()
		if err != nil {
			return fileScope{}, err
		}
		bases = []string{base}
	}
	sc := fileScope{agentDirs: true}
	for _, b := range bases {
		dir := filepath.Join(b, agentKey(a.ID))
		if err := privateDir(dir); err != nil {
			return fileScope{}, err
		}
		sc.roots = append(sc.roots, dir)
	}
	return sc, nil
}

// filesBase makes $TMPDIR/pagemux-files-<pid>-<random>, the parent of the
// agents' directories over HTTP without --workspace: a new one of this
// server's own (0700, made where none was), so that a server's close never
// removes another's, nor one made in its place beforehand.
func (w *workspace) filesBase() (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.base != "" {
		return w.base, nil
	}
	dir, err := os.MkdirTemp(w.temp, fmt.Sprintf("%s%d-", filesPrefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("make the agents' directory in %s: %w", w.temp, err)
	}
	w.base = dir
	return dir, nil
}

// privateDir makes dir with mode 0700, or checks that the one there is a
// directory of ours and not a symlink, and makes it 0700.
func privateDir(dir string) error {
	err := os.Mkdir(dir, 0o700)
	if err == nil || !errors.Is(err, fs.ErrExist) {
		if err != nil {
			return fmt.Errorf("make the directory %s: %w", dir, err)
		}
		return nil
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check the directory %s: %w", dir, err)
	}
	if !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 || !ownedByUs(fi) {
		return fmt.Errorf("%s is not a directory of this user: remove it, it is where pagemux keeps an agent's files", dir)
	}
	return os.Chmod(dir, 0o700)
}

// close removes the agents' directories pagemux made in the temp dir.
// Those under --workspace are kept: they are the agents' results.
func (w *workspace) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.base == "" {
		return nil
	}
	err := os.RemoveAll(w.base)
	w.base = ""
	return err
}

// clientRoots returns the roots the call's MCP client offers, asked once a
// session and again after it says they changed; nil if it offers none.
func (w *workspace) clientRoots(ctx context.Context) []string {
	sess := server.ClientSessionFromContext(ctx)
	info, ok := sess.(server.SessionWithClientInfo)
	if !ok || w.mcp == nil || info.GetClientCapabilities().Roots == nil {
		return nil
	}
	w.mu.Lock()
	roots, known := w.clients[sess.SessionID()]
	w.mu.Unlock()
	if known {
		return roots
	}
	rctx, cancel := context.WithTimeout(ctx, rootsWait)
	defer cancel()
	res, err := w.mcp.RequestRoots(rctx, mcp.ListRootsRequest{Request: mcp.Request{Method: string(mcp.MethodListRoots)}})
	if err != nil {
		// Asked again on the next call: the client may answer then.
		return nil
	}
	roots = []string{}
	for _, r := range res.Roots {
		if dir := rootDir(r.URI); dir != "" && checkRoot(dir, w.profiles()) == nil {
			roots = append(roots, dir)
		}
	}
	w.mu.Lock()
	if w.clients == nil {
		w.clients = map[string][]string{}
	}
	w.clients[sess.SessionID()] = roots
	w.mu.Unlock()
	return roots
}

// rootsChanged forgets the roots of the session in ctx, so the next call
// asks again (notifications/roots/list_changed). Without a session (mcp-go's
// in-process transport sends notifications without one) it forgets all.
func (w *workspace) rootsChanged(ctx context.Context, _ mcp.JSONRPCNotification) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if sess := server.ClientSessionFromContext(ctx); sess != nil {
		delete(w.clients, sess.SessionID())
	} else {
		clear(w.clients)
	}
}

// rootDir returns the directory of a file: root URI, resolved, or "" when it
// is not a file: URI of a directory that exists.
func rootDir(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") {
		return ""
	}
	dir, err := filepath.EvalSymlinks(filepath.FromSlash(u.Path))
	if err != nil || !filepath.IsAbs(dir) {
		return ""
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	return dir
}

// abs makes path absolute: a relative one lands in the scope's first root.
func (sc fileScope) abs(path string) (string, error) {
	if path == "" {
		return "", &argError{"empty file path"}
	}
	if filepath.IsAbs(path) {
		return filepath.Clean(path), nil
	}
	if len(sc.roots) == 0 {
		return "", sc.refuse(path)
	}
	return filepath.Join(sc.roots[0], path), nil
}

// check refuses a resolved path outside the scope's roots, or inside a
// directory no tool may reach whatever the roots say.
func (w *workspace) check(sc fileScope, path, full string) error {
	root := ""
	for _, r := range sc.roots {
		if browser.Within(full, r) {
			root = r
			break
		}
	}
	if root == "" {
		return sc.refuse(path)
	}
	for _, p := range w.profiles() {
		if browser.Within(full, resolved(p)) {
			return &argError{fmt.Sprintf("path %q lies in Chrome's profile (%s), which no tool may read or write: give a path outside it", path, p)}
		}
	}
	rel, err := filepath.Rel(root, full)
	if err != nil {
		return sc.refuse(path)
	}
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		if browser.IsPrivateName(name) {
			return &argError{fmt.Sprintf("path %q lies in a directory of Chrome or of a Chrome profile (%s), which no tool may read or write: give a path outside it", path, name)}
		}
		if strings.HasPrefix(name, filesPrefix) {
			return &argError{fmt.Sprintf("path %q lies in the directory of the agents of a pagemux serving HTTP (%s), which no other client may read or write: give a path outside it", path, name)}
		}
	}
	if sc.tempDefault != "" && root == sc.tempDefault && w.cwd != "" && w.cwd != root && browser.Within(full, w.cwd) {
		return &argError{fmt.Sprintf("path %q lies in pagemux's working directory (%s), which is not part of the workspace unless given with --workspace: give a path in %s", path, w.cwd, root)}
	}
	return nil
}

func (sc fileScope) refuse(path string) error {
	if sc.agentDirs {
		return &argError{fmt.Sprintf("path %q is outside the allowed roots (%s): over HTTP each agent may read and write files only in a directory of its own; give a path inside it, or a relative path, which lands there",
			path, strings.Join(sc.roots, ", "))}
	}
	if len(sc.roots) == 0 {
		return &argError{fmt.Sprintf("path %q is outside the allowed roots (none: no --workspace given exists); start pagemux with --workspace DIR", path)}
	}
	return &argError{fmt.Sprintf("path %q is outside the allowed roots (%s); give a path inside one of them (a relative path lands in %s), or start pagemux with --workspace DIR",
		path, strings.Join(sc.roots, ", "), sc.roots[0])}
}

// output checks a path a tool is to write and returns it absolute. Its
// directory is made if missing; the path itself may not exist yet.
func (w *workspace) output(ctx context.Context, path string) (string, error) {
	sc, err := w.scopeOf(ctx)
	if err != nil {
		return "", err
	}
	abs, err := sc.abs(path)
	if err != nil {
		return "", err
	}
	full := deepest(abs)
	if err := w.check(sc, path, full); err != nil {
		return "", err
	}
	if fi, err := os.Lstat(full); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return "", sc.refuse(path) // a symlink at the path itself could point anywhere
	}
	mode := os.FileMode(0o755)
	if sc.agentDirs {
		mode = 0o700
	}
	if err := os.MkdirAll(filepath.Dir(full), mode); err != nil {
		return "", fmt.Errorf("create the directory of %s: %w", path, err)
	}
	return full, nil
}

// input checks a path a tool is to read and returns it resolved.
func (w *workspace) input(ctx context.Context, path string) (string, error) {
	sc, err := w.scopeOf(ctx)
	if err != nil {
		return "", err
	}
	abs, err := sc.abs(path)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		// Say no to a path outside, not whether it exists.
		if cerr := w.check(sc, path, deepest(abs)); cerr != nil {
			return "", cerr
		}
		return "", &argError{fmt.Sprintf("cannot read %q: %v", path, err)}
	}
	if err := w.check(sc, path, real); err != nil {
		return "", err
	}
	return real, nil
}

// read reads a file a tool is given (what, such as "bodyFile", names it
// in errors): a path input allows, a regular file (a FIFO would block the
// call), of at most max bytes (max <= 0: any size).
func (w *workspace) read(ctx context.Context, what, path string, max int64) ([]byte, error) {
	full, err := w.input(ctx, path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(full)
	switch {
	case err != nil:
		return nil, &argError{fmt.Sprintf("cannot read %s %q: %v", what, path, err)}
	case !fi.Mode().IsRegular():
		return nil, &argError{fmt.Sprintf("%s %q is not a regular file", what, path)}
	case max > 0 && fi.Size() > max:
		return nil, &argError{fmt.Sprintf("%s %q has %d bytes, past the %s it may have", what, path, fi.Size(), sizeText(max))}
	}
	b, err := os.ReadFile(full)
	if err != nil {
		return nil, &argError{fmt.Sprintf("cannot read %s %q: %v", what, path, err)}
	}
	if max > 0 && int64(len(b)) > max { // it grew since
		return nil, &argError{fmt.Sprintf("%s %q has more than the %s it may have", what, path, sizeText(max))}
	}
	return b, nil
}

// sizeText is n bytes as a limit reads best: whole MiB, else bytes.
func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// deepest returns abs with the symlinks of its deepest existing ancestor
// resolved, so that a symlink cannot lead out; the rest may not exist yet.
func deepest(abs string) string {
	dir, rest := filepath.Dir(abs), []string{filepath.Base(abs)}
	for {
		if _, err := os.Lstat(dir); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
		dir = parent
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return filepath.Join(append([]string{dir}, rest...)...)
}

// write saves data to a checked output path and returns where it went.
func (w *workspace) write(ctx context.Context, path string, data []byte) (string, error) {
	full, err := w.output(ctx, path)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(full, w.masker.MaskBytes(data), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return full, nil
}

// downloadDir is where the downloads of a browser context go (see
// browser.DownloadDirFunc): over HTTP the downloads/ of the agent that made
// the context, none for the default context, which agents share; else the
// downloads/ of the first --workspace, or $TMPDIR/pagemux-downloads-<pid>.
func (w *workspace) downloadDir(ctx context.Context, contextName string) string {
	if a, ok := w.agentOf(ctx); ok {
		sc, err := w.agentScope(a)
		if err != nil || len(sc.roots) == 0 {
			return ""
		}
		return filepath.Join(sc.roots[0], "downloads")
	}
	if w.agentsOn {
		return "" // the default context, or one made outside a call
	}
	if len(w.given) > 0 {
		return filepath.Join(w.given[0], "downloads")
	}
	if w.given != nil {
		return "" // none of the given roots exists
	}
	return filepath.Join(w.temp, fmt.Sprintf("pagemux-downloads-%d", os.Getpid()))
}

// tempDir is where a tool saves what the agent named no path for (a big
// screenshot, a screencast, reports): over HTTP the agent's own directory,
// so that it may use them in later calls and no other agent can; else ""
// (the OS temp dir).
func (w *workspace) tempDir(ctx context.Context) string {
	if a, ok := w.agentOf(ctx); ok {
		if sc, err := w.agentScope(a); err == nil && len(sc.roots) > 0 {
			return sc.roots[0]
		}
	}
	return ""
}
