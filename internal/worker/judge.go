package worker

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/policy"
)

// RuleHostAccess names denials of jobs whose container would reach the
// host on a backend profile that does not allow it.
const RuleHostAccess = "host-access"

// hostAccess decides whether the job runs isolated on be. A backend whose
// isolation depends on the job (containers with mounts) says what reaches
// the host; such a job is refused (refused names why) unless the profile
// allows host access, and is never judged as isolated.
func (w *Worker) hostAccess(ctx context.Context, be backends.Backend, spec backends.Spec) (isolated bool, refused string, err error) {
	isolated = be.Capabilities().Isolated
	hc, ok := be.(backends.HostAccessChecker)
	if !ok {
		return isolated, "", nil
	}
	reasons, allowed, err := hc.HostAccess(ctx, spec)
	if err != nil || len(reasons) == 0 {
		return isolated, "", err
	}
	if !allowed {
		return false, "host access refused by the backend profile: " + strings.Join(reasons, "; "), nil
	}
	return false, "", nil
}

// judge asks the approval policy about the job's command, and records the
// decision with the job (result, event, metrics). An isolated workload
// skips the host-only rules and nothing else.
func (w *Worker) judge(j *job, isolated bool, shell string) policy.Decision {
	// The origin is the owner's, as the subject of the job's message
	// vouched for; the spec's own origin field is never trusted.
	origin := j.spec.Origin
	if j.run.Owner.Name != "" {
		origin = j.run.Owner.Origin
	}
	// The backend's shell, when it names one, decides the dialect;
	// otherwise the policy's own setting (policy.shell, default sh).
	var dialect policy.Shell
	if shell != "" {
		dialect = policy.ShellOf(shell)
	}
	// The whole job is judged: its directory and environment as the
	// spec gives them. Secret values stay sealed: the policy judges their
	// names and treats their values as unknown.
	env, secretEnv := j.spec.Env, j.spec.SecretEnv
	if len(j.spec.ForwardEnv) > 0 { // the worker's values: judged by name, unknown
		env, secretEnv = maps.Clone(env), slices.Concat(secretEnv, j.spec.ForwardEnv)
		if env == nil {
			env = map[string]string{}
		}
		for _, k := range j.spec.ForwardEnv {
			env[k] = ""
		}
	}
	dec := w.deps.Policy.Decide(policy.Request{
		Command:   j.spec.Command,
		Origin:    string(origin),
		Shell:     dialect,
		Mode:      policy.Mode(j.spec.Approval),
		Isolated:  isolated,
		Cwd:       j.spec.Cwd,
		Env:       env,
		SecretEnv: secretEnv,
	})
	decision := "approve"
	if !dec.Allow {
		decision = "deny"
	}
	rec := &jobs.PolicyRecord{Decision: decision, Mode: string(dec.Mode), Dangerous: dec.Dangerous, Capped: dec.Capped, Reason: dec.Reason, Shell: string(dec.Shell)}
	for i, m := range dec.Matches {
		if i == jobs.MaxPolicyMatches {
			rec.MatchesOmitted = len(dec.Matches) - i
			break
		}
		text := m.Text
		if len(text) > jobs.MaxPolicyMatchText {
			text = strings.ToValidUTF8(text[:jobs.MaxPolicyMatchText], "") + "…"
		}
		rec.Matches = append(rec.Matches, jobs.PolicyMatch{Rule: m.Rule, Text: text, Pos: m.Pos, Line: m.Line, Col: m.Col, Via: m.Via})
	}
	j.policy = rec
	// One count per rule that fired ("" for a clean command), so a
	// dashboard can rank rules.
	if len(dec.Matches) == 0 {
		w.m.PolicyDecisions.WithLabelValues(decision, string(dec.Mode), "").Inc()
	}
	seen := map[string]bool{}
	for _, m := range dec.Matches {
		if !seen[m.Rule] {
			seen[m.Rule] = true
			w.m.PolicyDecisions.WithLabelValues(decision, string(dec.Mode), m.Rule).Inc()
		}
	}
	if dec.Dangerous {
		msg := "denied: " + dec.Reason
		if dec.Allow {
			msg = "approved dangerous command: " + dec.Reason
			j.log.Warn("running a command the policy flags as dangerous", "rule", dec.Rule, "mode", dec.Mode)
		}
		w.store.PublishEvent(jobs.Event{Kind: "policy", JobID: j.spec.ID, Attempt: j.attempt, Worker: w.cfg.Name, Time: w.now().UTC(), Message: msg})
	}
	return dec
}
