package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
)

// chrome-devtools-mcp's flags, so that a client config written for it works
// with only its command changed. Those with a meaning here become pagemux's
// own; the rest (telemetry, channels, tool categories, experiments) are
// accepted and dropped with one warning line.

// nodeFlag is what one of chrome-devtools-mcp's flags becomes.
type nodeFlag struct {
	to    string // pagemux's flag; "" to drop it
	value bool   // it takes a value (the next argument unless given with =)
	// chromeArg makes the flag a --chrome-arg: the Chrome flag, with the
	// value appended after = when value is set.
	chromeArg string
	// negTo is pagemux's flag for the negated boolean (--no-x, --x=false).
	negTo string
	// many: the flag takes every value up to the next flag, as yargs reads
	// an array (--blocked-url-pattern a b).
	many bool
}

var nodeFlags = map[string]nodeFlag{
	"executablePath":      {to: "executable-path", value: true},
	"e":                   {to: "executable-path", value: true},
	"browserUrl":          {to: "browser-url", value: true},
	"u":                   {to: "browser-url", value: true},
	"wsEndpoint":          {to: "ws-endpoint", value: true},
	"w":                   {to: "ws-endpoint", value: true},
	"chromeArg":           {to: "chrome-arg", value: true},
	"userDataDir":         {to: "user-data-dir", value: true},
	"logFile":             {to: "log-file", value: true},
	"proxyServer":         {value: true, chromeArg: "--proxy-server"},
	"acceptInsecureCerts": {chromeArg: "--ignore-certificate-errors"},
	"blockedUrlPattern":   {to: "blocked-url", value: true, many: true},
	"allowedUrlPattern":   {to: "allowed-url", value: true, many: true},
	"fileNavigations":     {to: "allow-file-navigations", negTo: "no-file-navigations"},
	"autoConnect":         {to: "auto-connect", negTo: "auto-connect=false"},
	"screenshotQuality":   {to: "screenshot-quality", value: true},
}

// droppedNodeFlags have no meaning in pagemux; true: the flag takes a value.
var droppedNodeFlags = map[string]bool{
	"wsHeaders": true, "ignoreDefaultChromeArg": true,
	"screenshotFormat": true, "screenshotMaxWidth": true, "screenshotMaxHeight": true,
	"pageIdRouting": false, "devtoolsComments": false, "experimentalDevtools": false, "experimentalVision": false,
	"memoryDebugging": false, "experimentalStructuredContent": false, "experimentalToonFormat": false,
	"experimentalDataFormat": true, "experimentalIncludeAllPages": false, "experimentalInteropTools": false,
	"experimentalScreencast": false, "experimentalFfmpegPath": true, "screencastFps": true,
	"performanceCrux": false, "usageStatistics": false, "javascriptEvaluation": false,
	"sourceMaps": false, "clearcutEndpoint": true, "clearcutForceFlushIntervalMs": true,
	"clearcutIncludePidHeader": false, "viaCli": false, "redactNetworkHeaders": false,
	"allowUnrestrictedPaths": false, "filesystemRoot": true, "config": true,
	"categoryInput": false, "categoryNavigation": false, "categoryEmulation": false, "categoryPerformance": false,
	"categoryNetwork": false, "categoryDebugging": false, "categoryExtensions": false,
	"categoryExperimentalThirdParty": false, "categoryMemory": false, "categoryExperimentalWebmcp": false,
	"categoryPwa": false,
}

// camel turns a kebab-case flag name into chrome-devtools-mcp's camelCase,
// as its argument parser accepts both: browser-url → browserUrl.
func camel(name string) string {
	parts := strings.Split(name, "-")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			r := []rune(parts[i])
			r[0] = unicode.ToUpper(r[0])
			parts[i] = string(r)
		}
	}
	return strings.Join(parts, "")
}

// translateNodeFlags rewrites chrome-devtools-mcp's flags in args into
// pagemux's, and drops those without a meaning here, warning once on stderr.
// pagemux's own flags pass unchanged, and so does everything after "--".
func translateNodeFlags(args []string, own func(name string) bool, stderr io.Writer) []string {
	var out, dropped []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || own(name) {
			out = append(out, a)
			continue
		}
		key := camel(name)
		negated := false
		if k, ok := strings.CutPrefix(key, "no"); ok && len(k) > 0 && unicode.IsUpper(rune(k[0])) {
			k = strings.ToLower(k[:1]) + k[1:]
			_, dropped := droppedNodeFlags[k]
			if f, ok := nodeFlags[k]; dropped || ok && f.negTo != "" {
				key, negated = k, true
			}
		}
		takeValue := func() string {
			if hasVal {
				return val
			}
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		if f, ok := nodeFlags[key]; ok {
			switch {
			case f.negTo != "":
				if negated || hasVal && val == "false" {
					out = append(out, "--"+f.negTo)
				} else {
					out = append(out, "--"+f.to)
				}
			case f.many:
				out = append(out, "--"+f.to+"="+takeValue())
				for !hasVal && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
					i++
					out = append(out, "--"+f.to+"="+args[i])
				}
			case f.chromeArg != "" && f.value:
				out = append(out, "--chrome-arg="+f.chromeArg+"="+takeValue())
			case f.chromeArg != "":
				if !hasVal || val == "true" {
					out = append(out, "--chrome-arg="+f.chromeArg)
				}
			case f.value:
				out = append(out, "--"+f.to+"="+takeValue())
			default:
				out = append(out, "--"+f.to)
			}
			continue
		}
		if takes, ok := droppedNodeFlags[key]; ok {
			if takes && !negated {
				takeValue()
			}
			dropped = append(dropped, "--"+name)
			continue
		}
		out = append(out, a) // unknown: the flag parser says so
	}
	if len(dropped) > 0 {
		slices.Sort(dropped)
		fmt.Fprintf(stderr, "pagemux: ignoring chrome-devtools-mcp flags with no meaning here: %s\n", strings.Join(slices.Compact(dropped), " "))
	}
	return out
}
