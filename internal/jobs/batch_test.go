package jobs

import "testing"

// The dispatch subject and the cancel key carry the owner in fixed token
// positions, which the server's permissions pin; parsing them back must
// never let another shape through.
func TestOwnerSubjectsRoundTrip(t *testing.T) {
	q, p, o, ok := ParseJobSubject(JobSubject("gpu", "subagent.alice"))
	if !ok || q != "gpu" || p != "" || o != (Owner{Origin: OriginSubagent, Name: "alice"}) {
		t.Fatalf("got %q %q %+v %v", q, p, o, ok)
	}
	q, p, o, ok = ParseJobSubject(LaneSubject("gpu", "hpc-A_1", "subagent.alice"))
	if !ok || q != "gpu" || p != "hpc-A_1" || o != (Owner{Origin: OriginSubagent, Name: "alice"}) {
		t.Fatalf("lane: got %q %q %+v %v", q, p, o, ok)
	}
	for _, bad := range []string{"sandrun.jobs.q.gpu", "sandrun.jobs.q.gpu.manual", "sandrun.jobs.q.gpu.manual.a.b", "sandrun.jobs.delay.x", "sandrun.jobs.q..manual.a",
		"sandrun.jobs.q.gpu~.manual.a", "sandrun.jobs.q.~local.manual.a", "sandrun.jobs.q.gpu~a~b.manual.a", "sandrun.jobs.q.gpu~local.manual"} {
		if _, _, _, ok := ParseJobSubject(bad); ok {
			t.Errorf("%q parsed as a dispatch subject", bad)
		}
	}
	owner, id, ok := ParseCancelKey(CancelKey("manual.bob", "eval.000003"))
	if !ok || owner.String() != "manual.bob" || id != "eval.000003" {
		t.Fatalf("got %+v %q %v", owner, id, ok)
	}
	if _, _, ok := ParseCancelKey("cancel.x"); ok {
		t.Error("a cancel key without an owner parsed")
	}
}

// Job x never receives the events of job x.1 (or of any other job).
func TestEventFilterMatchesOneJob(t *testing.T) {
	match := func(filter, subject string) bool {
		f, s := splitTokens(filter), splitTokens(subject)
		for i, ft := range f {
			if ft == ">" {
				return len(s) > i
			}
			if i >= len(s) || (ft != "*" && ft != s[i]) {
				return false
			}
		}
		return len(f) == len(s)
	}
	if !match(EventFilter("x"), EventSubject("x", "finished")) {
		t.Fatal("job x does not see its own events")
	}
	for _, other := range []string{"x.1", "x.000001", "y"} {
		if match(EventFilter("x"), EventSubject(other, "finished")) || match(EventFilter("x"), EventSubject(other, EventOutput)) {
			t.Errorf("job x sees the events of job %s", other)
		}
	}
}

func splitTokens(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}
