package policy

import (
	"path"
	"slices"
	"strings"
)

// fileServers are the programs that serve a directory over HTTP: the option
// that names it (or "" for the first operand), and, for those that name it
// nowhere, the working directory they serve.
var fileServers = map[string]string{
	"http-server": "", "serve": "", "miniserve": "", "darkhttpd": "", "live-server": "", "servez": "",
	"static-web-server": "-d", "caddy": "--root", "webfsd": "-r",
}

// matchFileServer judges a program that serves a directory to the network
// (python -m http.server --directory ~, php -S 0.0.0.0:8000 -t ~, npx
// http-server ~): when the directory is the root, a system directory, a
// home or a tree of credentials, every file in it, keys included, can be
// fetched by anyone who reaches the port. Serving on the loopback address
// only is left alone.
func matchFileServer(c *command, h *hits) {
	dir, ok := servedDir(c)
	if !ok || dir.val == "" {
		return
	}
	for _, a := range c.args {
		if a.lit && loopbackBind(a.val) {
			return
		}
	}
	for _, p := range c.paths(dir) {
		clean, ok := cleanAbs(p)
		if ok && (credentialTree(p) || isCredentialPath(p) || isSystemDir(clean, true)) {
			h.add(ruleDataSend, c.name+" serves "+quoteDetail(dir.src)+", a tree that holds credentials or the system's files, on the network")
			return
		}
	}
}

// servedDir returns the directory a file server serves, when c is one.
func servedDir(c *command) (arg, bool) {
	args := c.args
	var opt string
	switch name := c.name; {
	case strings.HasPrefix(name, "python"):
		i := slices.IndexFunc(args, func(a arg) bool { return a.lit && a.val == "-m" })
		if i < 0 || i+1 >= len(args) || !args[i+1].lit || args[i+1].val != "http.server" && args[i+1].val != "SimpleHTTPServer" {
			return arg{}, false
		}
		args, opt = args[i+2:], "--directory"
		if v, ok := optionValue(args, opt, "-d"); ok {
			return v, true
		}
		return c.cwdArg(), true
	case name == "php":
		if !slices.ContainsFunc(args, func(a arg) bool { return a.lit && a.val == "-S" }) {
			return arg{}, false
		}
		if v, ok := optionValue(args, "-t", "--docroot"); ok {
			return v, true
		}
		return c.cwdArg(), true
	case name == "ruby":
		// ruby -run -e httpd DIR
		i := slices.IndexFunc(args, func(a arg) bool { return a.lit && a.val == "httpd" })
		if i < 1 || !args[i-1].lit || args[i-1].val != "-e" || !slices.ContainsFunc(args, func(a arg) bool { return a.lit && a.val == "-run" }) {
			return arg{}, false
		}
		for _, a := range args[i+1:] {
			if !a.lit || !strings.HasPrefix(a.val, "-") {
				return a, true
			}
		}
		return c.cwdArg(), true
	default:
		o, ok := fileServers[path.Base(c.name)]
		if !ok {
			return arg{}, false
		}
		opt = o
	}
	if opt != "" {
		if v, ok := optionValue(args, opt, ""); ok {
			return v, true
		}
		return c.cwdArg(), true
	}
	for _, a := range args {
		if !a.lit || !strings.HasPrefix(a.val, "-") {
			return a, true
		}
	}
	return c.cwdArg(), true
}

// optionValue returns the value of option long (or short): --opt V, --opt=V.
func optionValue(args []arg, long, short string) (arg, bool) {
	for i, a := range args {
		if !a.lit {
			continue
		}
		if (a.val == long || short != "" && a.val == short) && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a.val, long+"="); ok {
			return arg{val: v, src: v, lit: true, pos: a.pos, end: a.end, exact: -1}, true
		}
	}
	return arg{}, false
}

// cwdArg is the working directory as an operand, when it is known.
func (c *command) cwdArg() arg {
	if c.cwd.unknown || len(c.cwd.vals) != 1 {
		return arg{}
	}
	return arg{val: c.cwd.vals[0], src: c.cwd.vals[0], lit: true, exact: -1}
}

// loopbackBind reports a bind address on this machine only.
func loopbackBind(v string) bool {
	for _, l := range []string{"127.0.0.1", "localhost", "::1", "[::1]"} {
		if v == l || strings.HasPrefix(v, l+":") {
			return true
		}
	}
	return false
}
