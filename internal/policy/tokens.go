package policy

import (
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
)

// A token printer is a CLI command that prints an access token (gh auth
// token, gcloud auth print-access-token). Its output is meant for a request
// to its issuer: curl -H "Authorization: Bearer $(gh auth token)"
// https://api.github.com/... is how the token is used; the same header sent
// to any other host hands the account to that host.
type tokenPrinter struct {
	name  string   // the program
	words []string // its leading operands
	hosts []string // the issuer's domains (a host equal to one or under it)
	flag  string   // an option it needs to print the secret, or ""
}

var tokenPrinters = []tokenPrinter{
	{"gh", []string{"auth", "token"}, []string{"github.com", "githubusercontent.com", "github.io"}, ""},
	{"glab", []string{"auth", "token"}, []string{"gitlab.com"}, ""},
	{"gcloud", []string{"auth", "print-access-token"}, googleHosts, ""},
	{"gcloud", []string{"auth", "print-identity-token"}, googleHosts, ""},
	{"gcloud", []string{"auth", "application-default", "print-access-token"}, googleHosts, ""},
	{"az", []string{"account", "get-access-token"}, []string{"azure.com", "azure.net", "windows.net", "microsoft.com", "microsoftonline.com", "azure-api.net"}, ""},
	{"aws", []string{"ecr", "get-login-password"}, []string{"amazonaws.com"}, ""},
	{"aws", []string{"codeartifact", "get-authorization-token"}, []string{"amazonaws.com"}, ""},
	{"heroku", []string{"auth:token"}, []string{"heroku.com"}, ""},
	{"fly", []string{"auth", "token"}, []string{"fly.io", "fly.dev"}, ""},
	{"flyctl", []string{"auth", "token"}, []string{"fly.io", "fly.dev"}, ""},
	{"doctl", []string{"auth", "token"}, []string{"digitalocean.com"}, ""},
	{"vault", []string{"print", "token"}, nil, ""}, // its servers are the operator's: $VAULT_ADDR
	// a macOS keychain's password (security find-generic-password -s NAME -w)
	// belongs to whatever service stored it: any host is away
	{"security", []string{"find-generic-password"}, nil, "-w"},
	{"security", []string{"find-internet-password"}, nil, "-w"},
}

// tokenPrinterNames are the programs of tokenPrinters.
var tokenPrinterNames = func() map[string]bool {
	m := map[string]bool{}
	for _, p := range tokenPrinters {
		m[p.name] = true
	}
	return m
}()

var googleHosts = []string{"googleapis.com", "google.com", "run.app", "cloudfunctions.net", "appspot.com"}

// printsToken reports a command line that prints an access token.
func printsToken(words []arg) bool {
	_, ok := tokenPrinterOf(words)
	return ok
}

func tokenPrinterOf(words []arg) (tokenPrinter, bool) {
	if len(words) == 0 || !words[0].lit {
		return tokenPrinter{}, false
	}
	name := path.Base(words[0].val)
	if !tokenPrinterNames[name] {
		return tokenPrinter{}, false // the common case: no scan of the words
	}
	var ops []string
	for _, a := range words[1:] {
		if !a.lit {
			return tokenPrinter{}, false
		}
		if !strings.HasPrefix(a.val, "-") {
			ops = append(ops, a.val)
		}
	}
	for _, p := range tokenPrinters {
		if p.name == name && len(ops) >= len(p.words) && slices.Equal(ops[:len(p.words)], p.words) &&
			(p.flag == "" || slices.ContainsFunc(words[1:], func(a arg) bool { return a.val == p.flag })) {
			return p, true
		}
	}
	return tokenPrinter{}, false
}

// tokenSource finds, in a word's source text, the token printer a command
// substitution in it runs: "Bearer $(gh auth token)".
var tokenSource = regexp.MustCompile(`\$\(\s*([\w./-]+)\s+([^)]*)\)`)

// issuerHosts returns the domains the tokens in the words of c may be
// sent to: their printers' issuers when every token's printer shows in
// the word's source, else every known issuer (the token came through a
// variable).
func issuerHosts(c *command) []string {
	var hosts []string
	for _, a := range c.args {
		if a.taint&taintToken == 0 {
			continue
		}
		found := false
		for _, m := range tokenSource.FindAllStringSubmatch(a.src, -1) {
			words := []arg{{val: m[1], lit: true}}
			for _, f := range strings.Fields(m[2]) {
				words = append(words, arg{val: f, lit: true})
			}
			if p, ok := tokenPrinterOf(words); ok {
				hosts, found = append(hosts, p.hosts...), true
			}
		}
		if !found {
			for _, p := range tokenPrinters {
				hosts = append(hosts, p.hosts...)
			}
		}
	}
	return hosts
}

// payloadOpts are network programs' options whose value is sent, not a
// destination.
var payloadOpts = map[string]bool{"-d": true, "--data": true, "--data-raw": true, "--data-binary": true, "--data-urlencode": true,
	"-H": true, "--header": true, "-F": true, "--form": true, "--json": true, "-u": true, "--user": true, "-o": true, "--output": true,
	"-X": true, "--request": true, "-A": true, "--user-agent": true, "-e": true, "--referer": true, "-b": true, "--cookie": true,
	"--post-data": true, "--header=": true, "-O": true}

var (
	bareHost = regexp.MustCompile(`^([A-Za-z0-9-]+\.)+[A-Za-z]{2,}(:\d+)?(/\S*)?$|^\d{1,3}(\.\d{1,3}){3}(:\d+)?(/\S*)?$`)
	localish = []string{"localhost", "127.0.0.1", "::1", "0.0.0.0"}
)

// tokenSentAway reports where a network program sends an access token
// somewhere other than its issuer: a destination host outside the
// issuer's domains, or one computed at run time from what the script
// cannot know. It returns that destination.
func tokenSentAway(c *command) (string, bool) {
	if !slices.ContainsFunc(c.args, func(a arg) bool { return a.taint&taintToken != 0 }) {
		return "", false
	}
	allowed := issuerHosts(c)
	for i, a := range c.args {
		if a.lit && reroutes(a.val) {
			// the request may not go to the host the URL names
			// (--connect-to HOST:PORT:ELSEWHERE, a proxy, -k)
			return a.val, true
		}
		if a.taint&taintToken != 0 || i > 0 && c.args[i-1].lit && payloadOpts[c.args[i-1].val] {
			continue
		}
		if !a.lit {
			// a destination computed at run time; one from the operator's
			// environment ($VAULT_ADDR/v1/...) is theirs
			src := strings.Trim(a.src, `"'`)
			if (strings.HasPrefix(src, "$") || strings.Contains(src, "://")) && a.taint&^(taintEnv|taintEnvSet) != 0 {
				return a.src, true
			}
			continue
		}
		host := ""
		switch {
		case strings.Contains(a.val, "://"):
			u, err := url.Parse(a.val)
			if err != nil {
				return a.val, true
			}
			host = u.Hostname()
		case !strings.HasPrefix(a.val, "-") && !strings.HasPrefix(a.val, "@") && bareHost.MatchString(a.val):
			host, _, _ = strings.Cut(a.val, "/")
			if h, _, ok := strings.Cut(host, ":"); ok {
				host = h
			}
		default:
			continue
		}
		host = strings.ToLower(host)
		if slices.Contains(localish, host) {
			continue
		}
		if !slices.ContainsFunc(allowed, func(d string) bool { return host == d || strings.HasSuffix(host, "."+d) }) {
			return a.val, true
		}
	}
	return "", false
}

// reroutes reports a network program's option that sends the request
// somewhere other than the URL's host, or accepts any certificate there:
// curl --connect-to, --resolve, -x/--proxy, --preproxy, --socks5*, -k.
func reroutes(v string) bool {
	name, _, _ := strings.Cut(v, "=")
	switch name {
	case "--connect-to", "--resolve", "-x", "--proxy", "--preproxy", "-k", "--insecure", "--proxy-insecure", "--doh-url",
		"--socks4", "--socks4a", "--socks5", "--socks5-hostname", "-e", "--no-check-certificate":
		return true
	}
	return strings.HasPrefix(v, "-x") && len(v) > 2 && !strings.HasPrefix(v, "--") // -xhttp://proxy
}
