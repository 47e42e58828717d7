package policy

import (
	"strings"
)

// canonicalPath returns the path an absolute path names, as the kernel
// resolves it without reading the file system: empty and "." components
// are dropped (//, /./), ".." removes the component before it and stays
// at / (/tmp/../.. is /), and a /proc magic link to a process's root
// directory (/proc/self/root, /proc/thread-self/root, /proc/N/root,
// /proc/N/task/M/root) is / again, wherever it appears. Treating every
// process's root as / fails closed: a process in another mount namespace
// has its own root, which is at least as precious. Symbolic links the
// command itself creates are resolved by command.paths (see links.go).
func canonicalPath(p string) string {
	var stack []string
	for comp := range strings.SplitSeq(p, "/") {
		switch comp {
		case "", ".":
			continue
		case "..":
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		stack = append(stack, comp)
		if procRoot(stack) {
			stack = stack[:0]
		}
	}
	return "/" + strings.Join(stack, "/")
}

// procRoot reports whether the components of a path from / name a
// process's root directory in /proc.
func procRoot(stack []string) bool {
	n := len(stack)
	if n < 3 || stack[0] != "proc" || stack[n-1] != "root" {
		return false
	}
	switch n {
	case 3:
		return isProcess(stack[1])
	case 5:
		return isProcess(stack[1]) && stack[2] == "task" && isProcess(stack[3])
	}
	return false
}

// isProcess reports whether a /proc entry names a process: self,
// thread-self, a number, or a glob that may match one (/proc/*/root).
func isProcess(s string) bool {
	return s == "self" || s == "thread-self" || isDigits(s) || strings.ContainsAny(s, "*?[")
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// procCwd returns the rest of p after a /proc link to the working directory
// of the shell itself (/proc/self/cwd, /proc/thread-self/cwd, and
// /proc/$$/cwd is not known), and whether p starts with one.
func procCwd(p string) (string, bool) {
	for _, prefix := range []string{"/proc/self/cwd", "/proc/thread-self/cwd"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok && (rest == "" || rest[0] == '/') {
			return rest, true
		}
	}
	return "", false
}
