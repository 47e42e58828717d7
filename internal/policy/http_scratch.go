package policy

import (
	"regexp"
	"slices"
	"strings"
)

// A service's HTTP API makes and deletes resources too, and a test of it
// cleans up what it made:
//
//	id=$(curl -X POST https://api.example.com/v1/monitors -d '{...}' | jq -r .id) && ...; curl -X DELETE https://api.example.com/v1/monitors/$id
//	curl -X PUT http://search:9200/ci-4711 && ... && curl -X DELETE http://search:9200/ci-4711
//
// A POST to a collection makes a new resource whose ID the response holds:
// a variable that captured that ID (see printedID), on the && chain of the
// DELETE, names what the request made. The capture must fail when the
// request did (gh api --jq .id; curl -f ... | jq -er .id): an empty ID
// makes the DELETE one of the collection (CouchDB deletes the database).
// A PUT may replace what was there, so only a throwaway name (ci-4711)
// makes its URL the script's own.

// httpProg is the prog of the resources HTTP requests make.
const httpProg = "http"

// httpClients are the programs whose command line is one request.
var httpClients = map[string]bool{"curl": true, "wget": true, "http": true, "https": true, "xh": true, "xhs": true, "httpie": true, "curlie": true}

// httpieLike are the clients that take httpie's command line: [METHOD] URL
// ITEM...; curlie takes curl's options too.
var httpieLike = map[string]bool{"http": true, "https": true, "xh": true, "xhs": true, "httpie": true, "curlie": true}

// curlValueOptions are curl's options that take a value (wget, xh and
// httpie spell theirs with = or take none the reading here needs).
var curlValueOptions = map[string]bool{"-X": true, "--request": true, "-H": true, "--header": true, "-d": true, "--data": true,
	"--data-raw": true, "--data-binary": true, "--data-urlencode": true, "--data-ascii": true, "--json": true, "-u": true, "--user": true,
	"-o": true, "--output": true, "-A": true, "--user-agent": true, "-e": true, "--referer": true, "-b": true, "--cookie": true,
	"-c": true, "--cookie-jar": true, "--url": true, "-T": true, "--upload-file": true, "-F": true, "--form": true,
	"--connect-timeout": true, "-m": true, "--max-time": true, "--unix-socket": true, "--cacert": true, "--cert": true, "--key": true,
	"-w": true, "--write-out": true, "-x": true, "--proxy": true, "--retry": true, "-K": true, "--config": true, "--resolve": true,
	"--aws-sigv4": true, "--oauth2-bearer": true}

// forgeValueOptions are gh api's and glab api's options that take a value
// (their -f is a field, curl's a switch).
var forgeValueOptions = map[string]bool{"-X": true, "--method": true, "-H": true, "--header": true, "-f": true, "-F": true,
	"--field": true, "--raw-field": true, "--input": true, "-q": true, "--jq": true, "-t": true, "--template": true, "-p": true,
	"--preview": true, "--hostname": true, "--cache": true}

// httpDataOptions make a request without -X a POST: curl's and the
// forges' (-f and -F fields).
var httpDataOptions = map[string]bool{"-d": true, "--data": true, "--data-raw": true, "--data-binary": true, "--data-urlencode": true,
	"--data-ascii": true, "--json": true, "-F": true, "--form": true, "-f": true, "--field": true, "--raw-field": true, "--input": true}

// httpRequestOf returns the method and the URL word of an HTTP client's
// request: curl, wget, xh and httpie, and gh api / glab api (whose URL is
// a path of the forge's API).
func httpRequestOf(c *command) (method string, url arg, ok bool) {
	args, values := c.args, curlValueOptions
	forge := false
	switch {
	case httpClients[c.name]:
	case (c.name == "gh" || c.name == "glab") && len(args) > 0 && args[0].lit && args[0].val == "api":
		args, values, forge = args[1:], forgeValueOptions, true
	default:
		return "", arg{}, false
	}
	data := false
	found := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.val
		switch {
		case !a.lit && strings.HasPrefix(a.src, "-"):
			return "", arg{}, false
		case a.lit && strings.HasPrefix(v, "-X") && len(v) > 2:
			method = v[2:]
		case a.lit && (strings.HasPrefix(v, "--request=") || strings.HasPrefix(v, "--method=")):
			_, method, _ = strings.Cut(v, "=")
		case a.lit && (v == "-X" || v == "--request" || v == "--method"):
			if i+1 < len(args) {
				method = args[i+1].val
				i++
			}
		case a.lit && (strings.HasPrefix(v, "--post-data") || strings.HasPrefix(v, "--post-file")):
			data = true
		case a.lit && values[v]:
			data = data || httpDataOptions[v] && (forge || v != "-f")
			i++
		case a.lit && strings.HasPrefix(v, "-"):
			if k, _, ok := strings.Cut(v, "="); ok && httpDataOptions[k] {
				data = true
			}
		case !found && a.lit && httpieLike[c.name] && httpMethods[v]:
			method = v
		case !found:
			url, found = a, true
		default:
			if strings.Contains(v, "=") || strings.Contains(v, ":=") {
				data = true // httpie's and xh's fields
			}
		}
	}
	if !found {
		return "", arg{}, false
	}
	method = strings.ToUpper(method)
	if method == "" {
		method = "GET"
		if data {
			method = "POST"
		}
	}
	if forge && !strings.Contains(url.val, "://") {
		url.val = strings.TrimPrefix(url.val, "/")
	}
	return method, url, true
}

var httpMethods = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "HEAD": true}

// httpCreated returns what an HTTP request makes: a POST a new member of
// the collection it names (its ID in the response); a PUT the resource
// at its URL, when that is a throwaway name.
func httpCreated(c *command) []created {
	if !httpClients[c.name] && c.name != "gh" && c.name != "glab" {
		return nil
	}
	method, url, ok := httpRequestOf(c)
	if !ok || !url.lit {
		return nil
	}
	u, ok := normalURL(url.val)
	if !ok {
		return nil
	}
	switch method {
	case "POST":
		return []created{{prog: httpProg, prefix: []string{u}}}
	case "PUT":
		if throwawayName(u[strings.LastIndexByte(u, '/')+1:]) {
			return []created{{prog: httpProg, name: u}}
		}
	}
	return nil
}

// normalURL is a URL as resources are compared: no scheme, query or
// trailing slash, the host lower-cased. A URL with a wildcard names more
// than one resource.
func normalURL(u string) (string, bool) {
	u = strings.Trim(u, `"'`)
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	u, _, _ = strings.Cut(u, "?")
	u, _, _ = strings.Cut(u, "#")
	u = strings.TrimRight(u, "/")
	if u == "" || strings.ContainsAny(u, "*{}[] ") || strings.Contains(u, "/_all") {
		return "", false
	}
	host, rest, _ := strings.Cut(u, "/")
	return strings.ToLower(host) + "/" + rest, true
}

// idURL is a URL whose last component is a variable: .../customers/$id.
var idURL = regexp.MustCompile(`^["']?([^"'$?#\s]+)/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?["']?$`)

// deletesHTTPScratch reports a DELETE of what the script made through the
// same API: the member of a collection a POST made, by the ID a variable
// captured from its response, or a throwaway-named resource a PUT made.
func deletesHTTPScratch(c *command) bool {
	method, url, ok := httpRequestOf(c)
	if !ok || method != "DELETE" {
		return false
	}
	if m := idURL.FindStringSubmatch(url.src); m != nil && !url.lit {
		v, ok := c.vars[m[2]]
		coll, okURL := normalURL(m[1])
		return ok && okURL && v.id != nil && v.id.prog == httpProg && len(v.id.prefix) == 1 && v.id.prefix[0] == coll && capturedOnChain(c, *v.id)
	}
	if !url.lit {
		return false
	}
	u, ok := normalURL(url.val)
	if !ok {
		return false
	}
	for _, r := range slices.Concat(c.scratch, c.earlier) {
		if r.prog == httpProg && r.name != "" && r.name == u {
			return true
		}
	}
	return false
}
