package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Job origins known to the policy. A ceiling can be set for each.
var origins = []string{"manual", "cron", "batch", "subagent"}

// originDefault is the mode of a job that does not ask for one, whatever its
// origin: a job opts into anything more permissive.
const originDefault = ModeDeny

// Config is the approval policy of one worker. The zero Config is valid and
// means DefaultCeiling for every origin and an empty allowlist.
type Config struct {
	// Ceiling maps an origin ("manual", "cron", "batch", "subagent") to the
	// most permissive mode a job of that origin may get on this worker.
	// Order of permissiveness: deny < allowlist < approve. Missing origins
	// use DefaultCeiling.
	Ceiling map[string]Mode
	// Allowlist names rule IDs (see Rules) that may pass in allowlist mode.
	// "unparsable", "unresolved-command", "shell-dialect" and
	// "too-complex" cannot be listed: a command the detector cannot read
	// (or read in full, within its bounds) is never allowlisted.
	Allowlist []string
	// Shell is the dialect of a Request that names none: "sh" (or
	// "posix"), what backends run as /bin/sh -c, or "bash". "" means sh.
	Shell Shell
	// DisabledPacks names rule packs (see Packs) whose rules this worker
	// does not apply: a deployment without clusters may turn kube off. The
	// built-in rules cannot be turned off.
	DisabledPacks []string
	// TokenHosts names the deployment's own services that a job may send
	// a service's credential to (egress:token-sent): a self-managed GitLab
	// or GitHub Enterprise on the company's domain, an internal API
	// gateway. An entry is a host name or IPv4 address ("git.example.com"),
	// or "*." and a domain of at least two labels for the names under it
	// ("*.corp.example.com", not the domain itself). A request that sends
	// a credential to these hosts and no other is not token-sent.
	TokenHosts []string
}

// DefaultConfig returns the ceiling a worker gets when it configures none:
// subagent jobs at most allowlist, manual, cron and batch jobs at most
// approve. The allowlist is empty; requests are judged as sh.
func DefaultConfig() Config {
	c := Config{Ceiling: make(map[string]Mode, len(origins))}
	for _, o := range origins {
		c.Ceiling[o] = DefaultCeiling(o)
	}
	return c
}

// DefaultCeiling is the ceiling of an origin that Config.Ceiling does not
// name: ModeAllowlist for "subagent", ModeApprove for "manual", "cron" and
// "batch", and ModeDeny for anything else.
func DefaultCeiling(origin string) Mode {
	switch origin {
	case "subagent":
		return ModeAllowlist
	case "manual", "cron", "batch":
		return ModeApprove
	default:
		return ModeDeny
	}
}

// Configuration errors. Each is wrapped in a *FieldError naming the setting.
var (
	ErrUnknownOrigin = errors.New("unknown origin")
	ErrUnknownRule   = errors.New("unknown rule")
	ErrUnknownPack   = errors.New("unknown rule pack")
	// ErrNotAllowlistable is returned for a rule that exists but can never
	// pass in allowlist mode ("unparsable", "unresolved-command",
	// "shell-dialect").
	ErrNotAllowlistable = errors.New("rule cannot be allowlisted")
	// ErrBadHost is returned for a policy.token_hosts entry that is not a
	// host name or a *.domain pattern.
	ErrBadHost = errors.New("not a host name")
)

// validTokenHost reports a Config.TokenHosts entry: a host name, or "*."
// and a domain of two labels or more.
func validTokenHost(h string) bool {
	if d, ok := strings.CutPrefix(h, "*."); ok {
		return strings.Contains(d, ".") && hostName.MatchString(d)
	}
	return hostName.MatchString(h)
}

// trustedHost reports host as one of patterns (Config.TokenHosts).
func trustedHost(patterns []string, host string) bool {
	for _, p := range patterns {
		if d, ok := strings.CutPrefix(p, "*."); ok && strings.HasSuffix(host, "."+d) || p == host {
			return true
		}
	}
	return false
}

// FieldError is a configuration error about one setting, e.g.
// `policy.allowlist[2]: unknown rule "foo"`.
type FieldError struct {
	Field string // dotted path of the setting, e.g. "policy.ceiling.subagent"
	Err   error  // what is wrong; wraps one of the Err* sentinels
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// validate reports every problem in c, in a stable order, joined.
func (c Config) validate() error {
	var errs []error
	keys := make([]string, 0, len(c.Ceiling))
	for k := range c.Ceiling {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field := "policy.ceiling." + k
		if !slices.Contains(origins, k) {
			errs = append(errs, &FieldError{field, fmt.Errorf("%w %q (valid: %s)",
				ErrUnknownOrigin, k, strings.Join(origins, ", "))})
			continue
		}
		if _, err := ParseMode(string(c.Ceiling[k])); err != nil {
			errs = append(errs, &FieldError{field, err})
		}
	}
	for i, id := range c.Allowlist {
		field := fmt.Sprintf("policy.allowlist[%d]", i)
		r, ok := lookupRule(id)
		switch {
		case !ok:
			errs = append(errs, &FieldError{field, fmt.Errorf("%w %q (valid: %s)",
				ErrUnknownRule, id, strings.Join(allowlistableIDs(), ", "))})
		case !r.allowlistable():
			errs = append(errs, &FieldError{field, fmt.Errorf("%w: %q", ErrNotAllowlistable, id)})
		}
	}
	for i, name := range c.DisabledPacks {
		if !slices.ContainsFunc(Packs(), func(p PackInfo) bool { return p.Name == name }) {
			errs = append(errs, &FieldError{fmt.Sprintf("policy.disabled_packs[%d]", i), fmt.Errorf("%w %q (valid: %s)",
				ErrUnknownPack, name, strings.Join(packNames(), ", "))})
		}
	}
	for i, h := range c.TokenHosts {
		if !validTokenHost(h) {
			errs = append(errs, &FieldError{fmt.Sprintf("policy.token_hosts[%d]", i), fmt.Errorf("%w %q (a lowercase host name such as git.example.com, or *.example.com for the names under a domain; no scheme, port or path)",
				ErrBadHost, h)})
		}
	}
	if _, err := ParseShell(string(c.Shell)); err != nil {
		errs = append(errs, &FieldError{"policy.shell", err})
	}
	return errors.Join(errs...)
}
