//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// defaultPath is the PATH apptainer gives every container.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// alwaysPassKeys are forwarded even with --cleanenv
// (internal/pkg/util/env/clean.go).
var alwaysPassKeys = map[string]bool{
	"TERM": true, "http_proxy": true, "HTTP_PROXY": true, "https_proxy": true, "HTTPS_PROXY": true,
	"no_proxy": true, "NO_PROXY": true, "all_proxy": true, "ALL_PROXY": true, "ftp_proxy": true, "FTP_PROXY": true,
}

// alwaysOmitKeys are never forwarded from the host; the value says
// whether APPTAINERENV_/--env may set them.
var alwaysOmitKeys = map[string]bool{
	"HOME": false, "PATH": false, "APPTAINER_SHELL": false, "APPTAINER_APPNAME": false,
	"SINGULARITY_SHELL": false, "SINGULARITY_APPNAME": false, "LD_LIBRARY_PATH": true,
}

// overridePrefixes set container variables, in order of precedence.
var overridePrefixes = []string{"APPTAINERENV_", "SINGULARITYENV_"}

// envList is an ordered environment.
type envList struct {
	keys []string
	vals map[string]string
}

func (e *envList) set(k, v string) {
	if _, ok := e.vals[k]; !ok {
		e.keys = append(e.keys, k)
	}
	e.vals[k] = v
}

func (e *envList) list() []string {
	out := make([]string, 0, len(e.keys))
	for _, k := range e.keys {
		out = append(out, k+"="+e.vals[k])
	}
	return out
}

// containerEnv is the payload's environment, following apptainer's
// SetContainerEnv: host variables are forwarded (with --cleanenv only
// TERM and the proxies) except APPTAINER_*, SINGULARITY_*, HOME, PATH and
// LD_LIBRARY_PATH; APPTAINERENV_X=v sets X; HOME is the home destination
// and PATH the default. Then the --env-file variables and --env pairs
// override, PATH, PREPEND_PATH and APPEND_PATH adjust PATH, and the
// APPTAINER_CONTAINER/APPTAINER_NAME markers are added.
func containerEnv(o *execOptions, envFile string, envFlag map[string]string) ([]string, error) {
	host := os.Environ()
	e := &envList{vals: map[string]string{}}
	if o.cleanEnv {
		e.set("LANG", "C")
	}
	paths := map[string]string{} // PATH, PREPEND_PATH, APPEND_PATH overrides
	overridden := map[string]bool{}
	user := func(key, value, source string) {
		switch key {
		case "PATH", "PREPEND_PATH", "APPEND_PATH":
			paths[key] = value
			return
		}
		if permitted, ok := alwaysOmitKeys[key]; ok && !permitted {
			warn("Overriding %s environment variable with %s is not permitted", key, source)
			return
		}
		e.set(key, value)
		overridden[key] = true
	}
	for _, prefix := range overridePrefixes {
		for _, kv := range host {
			k, v, _ := strings.Cut(kv, "=")
			key, ok := strings.CutPrefix(k, prefix)
			_, pathSet := paths[key]
			if !ok || key == "" || overridden[key] || pathSet {
				continue
			}
			user(key, v, k)
		}
	}
	for _, kv := range host {
		k, v, _ := strings.Cut(kv, "=")
		if hasAnyPrefix(k, "APPTAINER_", "SINGULARITY_", "APPTAINERENV_", "SINGULARITYENV_") || overridden[k] {
			continue
		}
		if _, omit := alwaysOmitKeys[k]; alwaysPassKeys[k] || (!omit && !o.cleanEnv) {
			e.set(k, v)
		}
	}
	e.set("HOME", o.home.Dst)
	e.set("PATH", defaultPath)

	fileVars, err := readEnvFile(envFile, host)
	if err != nil {
		return nil, err
	}
	for _, src := range []map[string]string{fileVars, envFlag} {
		for _, k := range sortedKeys(src) {
			user(k, src[k], "--env")
		}
	}
	if p, ok := paths["PATH"]; ok {
		e.set("PATH", p)
	}
	if p, ok := paths["PREPEND_PATH"]; ok {
		e.set("PATH", p+":"+e.vals["PATH"])
	}
	if p, ok := paths["APPEND_PATH"]; ok {
		e.set("PATH", e.vals["PATH"]+":"+p)
	}
	for _, prefix := range []string{"APPTAINER_", "SINGULARITY_"} {
		e.set(prefix+"CONTAINER", o.image)
		e.set(prefix+"NAME", filepath.Base(o.image))
	}
	return e.list(), nil
}

// readEnvFile reads an --env-file. apptainer evaluates the file with a
// shell interpreter; the fake takes its variable assignments (NAME=value
// and export NAME=value, in shell syntax, expanding earlier variables and
// the host's) and refuses anything else.
func readEnvFile(path string, host []string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fatalf("while processing %s: %v", path, err)
	}
	file, err := syntax.NewParser().Parse(bytes.NewReader(data), path)
	if err != nil {
		return nil, fatalf("while processing %s: %v", path, err)
	}
	out := map[string]string{}
	for _, stmt := range file.Stmts {
		var assigns []*syntax.Assign
		switch c := stmt.Cmd.(type) {
		case *syntax.CallExpr:
			if len(c.Args) == 0 {
				assigns = c.Assigns
			}
		case *syntax.DeclClause:
			if c.Variant.Value == "export" {
				assigns = c.Args
			}
		}
		if assigns == nil {
			return nil, fatalf("while processing %s: line %d: the fake only takes variable assignments", path, stmt.Pos().Line())
		}
		for _, a := range assigns {
			if a.Naked || a.Name == nil {
				continue
			}
			env := slices.Clone(host)
			for _, k := range sortedKeys(out) {
				env = append(env, k+"="+out[k])
			}
			val := ""
			if a.Value != nil {
				if val, err = expand.Literal(&expand.Config{Env: expand.ListEnviron(env...)}, a.Value); err != nil {
					return nil, fatalf("while processing %s: %s: %v", path, a.Name.Value, err)
				}
			}
			if a.Append {
				val = out[a.Name.Value] + val
			}
			out[a.Name.Value] = val
		}
	}
	return out, nil
}

// envValue returns key's value in env.
func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// hasAnyPrefix reports whether s starts with one of prefixes.
func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// warn prints a WARNING line like apptainer's unless -q or -s was given.
func warn(format string, args ...any) {
	if !quiet {
		fmt.Fprintf(os.Stderr, "WARNING: "+format+"\n", args...)
	}
}
