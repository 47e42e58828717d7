package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrNoCgroup2 reports that this process has no cgroup v2 hierarchy it
// can reach: none mounted (a cgroup v1 host), or ours outside the mount.
var ErrNoCgroup2 = errors.New("no cgroup v2 hierarchy")

// Self returns the directory of this process's own cgroup v2, found from
// /proc/self/cgroup (its "0::/path" line) and /proc/self/mountinfo (where
// cgroup2 is mounted: /sys/fs/cgroup on a unified host,
// /sys/fs/cgroup/unified on a hybrid one).
func Self() (string, error) {
	own, err := readFile("/proc/self/cgroup", ownPath)
	if err != nil {
		return "", err
	}
	mounts, err := readFile("/proc/self/mountinfo", cgroup2Mounts)
	if err != nil {
		return "", err
	}
	return dirOf(own, mounts)
}

func readFile[T any](name string, parse func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(name)
	if err != nil {
		var zero T
		return zero, err
	}
	defer func() { _ = f.Close() }()
	v, err := parse(f)
	if err != nil {
		return v, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// ownPath returns the cgroup v2 path of a /proc/PID/cgroup file: the
// "0::/path" line. On a cgroup v1 host there is none.
func ownPath(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			if !strings.HasPrefix(p, "/") {
				return "", fmt.Errorf("cgroup v2 path %q: not absolute", p)
			}
			return p, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%w: no 0:: line", ErrNoCgroup2)
}

// mount is one cgroup2 mount: Root is the cgroup path it shows at Point.
type mount struct {
	Root, Point string
}

// cgroup2Mounts returns the cgroup2 mounts of a /proc/PID/mountinfo file,
// in its order.
func cgroup2Mounts(r io.Reader) ([]mount, error) {
	var out []mount
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields := strings.Fields(pre)
		if !ok || len(fields) < 5 || strings.Fields(post + " x")[0] != "cgroup2" {
			continue
		}
		root, err1 := unescape(fields[3])
		point, err2 := unescape(fields[4])
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		out = append(out, mount{Root: root, Point: point})
	}
	return out, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			n, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
			if err != nil {
				return "", fmt.Errorf("mountinfo field %q: bad escape", s)
			}
			b.WriteByte(byte(n))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String(), nil
}

// dirOf returns where cgroup path own is on disk: under the first mount
// whose root holds it.
func dirOf(own string, mounts []mount) (string, error) {
	if len(mounts) == 0 {
		return "", fmt.Errorf("%w: no cgroup2 mount", ErrNoCgroup2)
	}
	// A cgroup outside our cgroup namespace shows as /../...: not ours to
	// find on disk.
	if slices.Contains(strings.Split(own, "/"), "..") {
		return "", fmt.Errorf("%w: cgroup %s is outside this cgroup namespace", ErrNoCgroup2, own)
	}
	own = path.Clean(own)
	for _, m := range mounts {
		rel, ok := within(path.Clean(m.Root), own)
		if ok {
			return filepath.Join(m.Point, filepath.FromSlash(rel)), nil
		}
	}
	return "", fmt.Errorf("%w: cgroup %s is under no cgroup2 mount's root", ErrNoCgroup2, own)
}

// within returns p relative to root when p is root or below it.
func within(root, p string) (string, bool) {
	if root == "/" {
		return p, true
	}
	if p == root {
		return "/", true
	}
	rest, ok := strings.CutPrefix(p, root+"/")
	return "/" + rest, ok
}
