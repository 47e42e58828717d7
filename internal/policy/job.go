package policy

import (
	"slices"
	"strings"
)

// jobEnv returns the shell state a job's command starts in, for the
// detector to judge the command as it runs, not as it reads:
//
//   - the working directory is Request.Cwd, canonicalised, when it is
//     absolute (cwd: / with rm -rf * is rm -rf /*); "" or a relative
//     directory (resolved by the backend against something the policy does
//     not know) stays unknown, as before;
//   - every variable of Request.Env whose name a shell imports holds its
//     value ($T is /usr with env T=/usr) until the command assigns it; a
//     secret's value is unknown. HOME may hold its value or stay the home
//     directory (homeMarker), so $HOME and ~ remain protected whatever the
//     job says HOME is; PWD is the shell's own (it resets it to the
//     directory it starts in), and IFS is not imported by bash (a job that
//     sets it is refused anyway, see envcode.go).
func jobEnv(req Request) *env {
	e := newEnv()
	if c, ok := jobCwd(req.Cwd); ok {
		e.cwd = known(c)
	}
	for k, v := range req.Env {
		if !isName(k) || k == "PWD" || k == "IFS" {
			continue
		}
		val := known(v)
		if slices.Contains(req.SecretEnv, k) {
			val = unknownValue
		}
		if k == "HOME" {
			val = union(known(homeMarker), val)
		}
		e.set(k, val, false)
		e.export(k)
	}
	return e
}

// jobCwd returns the canonical form of a job's working directory, when it
// is absolute.
func jobCwd(cwd string) (string, bool) {
	if !strings.HasPrefix(cwd, "/") {
		return "", false
	}
	return canonicalPath(cwd), true
}
