package worker

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Forward is what a backend profile forwards into its sandboxes from the
// worker (forward_env): a variable NAME and where its value comes from,
// "env:VAR" (the worker's own environment) or "file:PATH" (a file on the
// worker, its trailing newline dropped). A job names the variables it
// needs (spec forward_env) and never holds their values; the values are
// masked in its output like secret_env's.
type Forward map[string]string

// maxForwardFile bounds a forwarded file's size.
const maxForwardFile = 64 << 10

var forwardName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks the names and sources; errors name field.NAME.
func (f Forward) Validate(field string) error {
	for _, name := range slices.Sorted(maps.Keys(f)) {
		src := f[name]
		kind, ref, _ := strings.Cut(src, ":")
		switch {
		case !forwardName.MatchString(name):
			return fmt.Errorf("%s.%s: not a valid variable name", field, name)
		case kind == "env" && forwardName.MatchString(ref):
		case kind == "file" && strings.HasPrefix(ref, "/"):
		default:
			return fmt.Errorf("%s.%s: %q: want env:VARIABLE or file:/ABSOLUTE/PATH", field, name, src)
		}
	}
	return nil
}

// value reads the current value of name, read when the job starts (a
// rotated token file is picked up by the next job).
func (f Forward) value(name string) (string, error) {
	kind, ref, _ := strings.Cut(f[name], ":")
	if kind == "env" {
		v, ok := os.LookupEnv(ref)
		if !ok {
			return "", fmt.Errorf("the worker's variable %s is not set", ref)
		}
		return v, nil
	}
	fi, err := os.Stat(ref)
	if err != nil {
		return "", fmt.Errorf("file %s: %w", ref, err)
	}
	if fi.Size() > maxForwardFile {
		return "", fmt.Errorf("file %s: %d bytes, limit %d", ref, fi.Size(), maxForwardFile)
	}
	data, err := os.ReadFile(ref)
	if err != nil {
		return "", fmt.Errorf("file %s: %w", ref, err)
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}

// forwardEnv adds the variables a job names in forward_env to env, from
// its profile's Forward, and returns their values (to be masked). A name
// the profile does not forward, or a source that cannot be read, fails
// the job: its error names the field and never a value.
func (w *Worker) forwardEnv(profile string, names []string, env map[string]string) ([]string, error) {
	f := w.deps.Forward[profile]
	var values []string
	for _, name := range names {
		if _, ok := f[name]; !ok {
			return nil, fmt.Errorf("forward_env.%s: profile %s does not forward it (it forwards: %v)", name, profile, slices.Sorted(maps.Keys(f)))
		}
		v, err := f.value(name)
		if err != nil {
			return nil, fmt.Errorf("forward_env.%s: %w", name, err)
		}
		env[name] = v
		if v != "" {
			values = append(values, v)
		}
	}
	return values, nil
}
