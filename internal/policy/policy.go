// Package policy decides whether a job's command may run on a worker.
//
// Nobody is asked: the decision is made from the command text, the job's
// origin, its requested mode and whether its backend can touch the host,
// under a ceiling set by the worker.
//
//  1. The effective mode is the job's requested mode (or, when it asks for
//     none, the origin default, which is ModeDeny for every origin), lowered
//     to the worker's ceiling for that origin. Permissiveness is ordered
//     deny < allowlist < approve.
//  2. The detector parses the command with a real shell parser
//     (mvdan.cc/sh), in the dialect of the shell that runs it
//     (Request.Shell: sh, the default, for /bin/sh -c, or bash), and
//     judges every command that would run, as that shell would see it:
//     quotes and escapes removed, variables assigned earlier
//     in the script or set by the job (Request.Env) substituted, paths
//     canonicalised and joined to the job's directory (Request.Cwd)
//     and through links the command creates (see job.go), wrappers (sudo, env, timeout, xargs,
//     find -exec) stripped, and nested code walked: $(...), sh -c, eval,
//     heredocs and pipes into shells, interpreters (python -c) and SQL
//     clients, scripts the command writes and then runs. It reads the
//     command as POSIX sh and as bash too: where the two disagree (see
//     dialect.go) it judges both readings, and a command whose sh reading
//     is not certain fails closed ("shell-dialect").
//  3. Every rule hit is a Match (see Rules). Host-only rules are skipped
//     when Request.Isolated is set; no backend skips the others.
//  4. A command with no match is allowed in every mode. A dangerous one is
//     refused in ModeDeny, allowed in ModeApprove (and recorded as
//     dangerous), and in ModeAllowlist allowed only if every matched rule is
//     allowlisted. A command that does not parse ("unparsable") or runs
//     something built from values the detector cannot resolve
//     ("unresolved-command") or reads differently in the two dialects
//     ("shell-dialect"), and a job whose environment makes something run
//     code ("env-code"), or that is past a bound or the work budget of the
//     detector ("too-complex", see budget.go), is dangerous, and no
//     allowlist can admit it (fail closed).
//
// The detector is an internal piece; only Decide and Rules expose it.
package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Engine applies one worker's policy. It is immutable once built by New and
// safe for concurrent use.
type Engine struct {
	ceiling   map[string]Mode // every known origin -> its ceiling
	allowlist map[string]bool // rule IDs that pass in allowlist mode
	shell     Shell           // the dialect of a request that names none
	packsOff  map[string]bool // rule packs this worker does not apply
	tokenTo   []string        // Config.TokenHosts
}

// New validates cfg and builds an Engine. Origins missing from cfg.Ceiling
// get DefaultCeiling. Every problem is reported, each as a *FieldError
// naming the setting, joined with errors.Join.
func New(cfg Config) (*Engine, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		ceiling:   make(map[string]Mode, len(origins)),
		allowlist: make(map[string]bool, len(cfg.Allowlist)),
		shell:     ShellSh,
	}
	if sh, ok := cfg.Shell.canonical(); ok {
		e.shell = sh
	}
	for _, o := range origins {
		m, ok := cfg.Ceiling[o]
		if !ok {
			m = DefaultCeiling(o)
		}
		e.ceiling[o] = m
	}
	for _, id := range cfg.Allowlist {
		e.allowlist[id] = true
	}
	if len(cfg.DisabledPacks) > 0 {
		e.packsOff = make(map[string]bool, len(cfg.DisabledPacks))
		for _, p := range cfg.DisabledPacks {
			e.packsOff[p] = true
		}
	}
	e.tokenTo = slices.Clone(cfg.TokenHosts)
	return e, nil
}

// Request is one command to decide on.
type Request struct {
	Command string // shell command line as given to sh -c
	Origin  string // manual|cron|batch|subagent; anything else gets ceiling deny
	Mode    Mode   // the job's requested mode; "" = origin default (deny); an unknown mode counts as deny
	// Isolated says the backend cannot touch the host (a container
	// without host mounts, a remote sandbox): host-only rules
	// (RuleInfo.HostOnly) are skipped; every other rule still applies. The
	// zero value applies every rule, so a caller that forgets to say fails
	// closed.
	Isolated bool
	// Shell is the dialect of the shell that runs Command: ShellSh (or
	// "posix") for /bin/sh -c, which is what backends run; ShellBash for
	// bash -c. "" means the engine's default (Config.Shell, else sh). An
	// unknown shell is judged as sh and fails closed (shell-dialect).
	Shell Shell
	// Cwd is the directory Command starts in: relative paths in it (rm -rf
	// *, rm -rf .) are judged joined to it. "" or a relative directory
	// means not known.
	Cwd string
	// Env is the environment the job sets. A variable that makes a shell,
	// an interpreter or the loader run code is refused (env-code); the
	// others are the values Command's variables start with ($T is what
	// Env["T"] holds, until the command assigns T).
	Env map[string]string
	// SecretEnv names keys of Env whose values are sealed: their names are
	// judged, their values are unknown (never opened for the policy).
	SecretEnv []string
}

// Match is one rule hit in a command, recorded with the job.
type Match struct {
	Rule string `json:"rule"`
	// Text is the matched command text as written; for a nested script
	// (sh -c, eval, python -c) it is the inner text; for env-code it is
	// the name of the job's variable (Pos 0).
	Text string `json:"text"`
	// Pos is the byte offset in Request.Command where Text begins, or where
	// the outer word containing it begins when a nested script cannot be
	// mapped exactly. Line and Col (1-based; Col counts bytes) locate Pos.
	Pos      int    `json:"pos"`
	Line     int    `json:"line"`
	Col      int    `json:"col"`
	HostOnly bool   `json:"host_only"`
	Via      string `json:"via,omitempty"` // nesting path, levels joined by " > ": "sh -c", "eval", "xargs", "find -exec", "python3 -c > os.system"
}

// Decision is the outcome of Decide. It is meant to be recorded with the job.
type Decision struct {
	Allow     bool
	Mode      Mode   // effective mode after defaults and the ceiling
	Dangerous bool   // the detector matched at least one rule
	Rule      string // ID of the (first) rule that fired, "" if none
	Reason    string // human text: what matched and why it was allowed/denied (no variable values)
	Capped    bool   // the requested mode was lowered by the worker ceiling
	Shell     Shell  // the dialect the command was judged in: ShellSh or ShellBash
	// Matches lists every rule hit, in command order. Host-only hits are
	// left out when the request has no host access.
	Matches []Match
}

// Decide applies the policy to req. It always returns, whatever the command
// text; see the package documentation for the semantics.
func (e *Engine) Decide(req Request) Decision {
	var notes []string
	requested := req.Mode
	switch {
	case requested == "":
		requested = originDefault
	case !requested.valid():
		notes = append(notes, fmt.Sprintf("unknown requested mode %s counts as deny", quoteDetail(string(requested))))
		requested = ModeDeny
	}
	ceiling, ok := e.ceiling[req.Origin]
	if !ok {
		ceiling = ModeDeny
		notes = append(notes, fmt.Sprintf("unknown origin %s gets ceiling deny", quoteDetail(req.Origin)))
	}
	d := Decision{Mode: minMode(requested, ceiling)}
	if d.Mode != requested {
		d.Capped = true
		notes = append(notes, fmt.Sprintf("requested mode %s capped to %s by the worker ceiling for origin %s",
			requested, ceiling, quoteDetail(req.Origin)))
	}

	sh, known := req.Shell.canonical()
	if req.Shell == "" {
		sh, known = e.shell, true
	}
	if !known {
		sh = ShellSh
	}
	d.Shell = sh
	all := append(envFindings(req.Env, req.SecretEnv), detectWith(req.Command, sh, jobEnv(req), nil)...)
	if !known {
		all = append([]finding{{rule: ruleShellDialect, text: req.Command,
			detail: fmt.Sprintf("unknown shell %s: the detector reads sh and bash only", quoteDetail(string(req.Shell)))}}, all...)
	}
	findings := applicable(slices.Clone(all), !req.Isolated)
	if skipped := len(all) - len(findings); skipped > 0 {
		notes = append(notes, fmt.Sprintf("%d host-only match(es) skipped: no host access", skipped))
	}
	if len(e.packsOff) > 0 {
		findings = slices.DeleteFunc(findings, func(f finding) bool {
			r, _ := lookupRule(f.rule)
			return e.packsOff[r.pack]
		})
	}
	if len(e.tokenTo) > 0 {
		n := len(findings)
		findings = slices.DeleteFunc(findings, func(f finding) bool {
			return f.rule == ruleTokenSent && len(f.hosts) > 0 &&
				!slices.ContainsFunc(f.hosts, func(h string) bool { return !trustedHost(e.tokenTo, h) })
		})
		if n > len(findings) {
			notes = append(notes, fmt.Sprintf("%d credential(s) sent only to policy.token_hosts", n-len(findings)))
		}
	}
	var verdict, why string
	switch {
	case len(findings) == 0:
		d.Allow, verdict, why = true, "allowed", "no dangerous command detected"
	case d.Mode == ModeApprove:
		d.Allow, verdict = true, "allowed as approved-dangerous"
	case d.Mode == ModeAllowlist:
		if missing := e.notAllowlisted(findings); len(missing) > 0 {
			verdict = "denied"
			notes = append([]string{"not allowlisted: " + strings.Join(missing, ", ")}, notes...)
		} else {
			d.Allow, verdict = true, "allowed"
			notes = append([]string{"every matched rule is allowlisted"}, notes...)
		}
	default:
		verdict = "denied"
	}
	if len(findings) > 0 {
		d.Dangerous = true
		d.Rule = findings[0].rule
		d.Matches = matches(req.Command, findings)
		why = describeFindings(findings)
	}
	d.Reason = strings.Join(append([]string{fmt.Sprintf("%s in mode %s: %s", verdict, d.Mode, why)}, notes...), "; ")
	return d
}

// applicable drops the host-only findings when the backend has no host
// access. It filters in place.
func applicable(findings []finding, hostAccess bool) []finding {
	if hostAccess {
		return findings
	}
	return slices.DeleteFunc(findings, func(f finding) bool { return f.hostOnly })
}

// matches converts findings to Matches with line and column of each
// position in cmd.
func matches(cmd string, findings []finding) []Match {
	out := make([]Match, len(findings))
	var newlines []int // offsets of the newlines in cmd: one pass, however many findings
	for i := range len(cmd) {
		if cmd[i] == '\n' {
			newlines = append(newlines, i)
		}
	}
	for i, f := range findings {
		pos := min(max(f.pos, 0), len(cmd))
		n, _ := slices.BinarySearch(newlines, pos) // newlines before pos
		line, col := n+1, pos+1
		if n > 0 {
			col = pos - newlines[n-1]
		}
		out[i] = Match{Rule: f.rule, Text: f.text, Pos: pos, Line: line, Col: col, HostOnly: f.hostOnly, Via: f.via}
	}
	return out
}

// notAllowlisted returns the distinct rules among findings that the
// allowlist does not admit, in order of first appearance.
func (e *Engine) notAllowlisted(findings []finding) []string {
	var missing []string
	for _, f := range findings {
		r, _ := lookupRule(f.rule)
		if (!e.allowlist[f.rule] || !r.allowlistable()) && !slices.Contains(missing, f.rule) {
			missing = append(missing, f.rule)
		}
	}
	return missing
}

// describeFindings lists the first few findings as "rule (detail)".
func describeFindings(findings []finding) string {
	const shown = 3
	parts := make([]string, 0, shown+1)
	for i, f := range findings {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(findings)-shown))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", f.rule, f.detail))
	}
	return strings.Join(parts, ", ")
}
