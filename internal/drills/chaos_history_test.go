package drills

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
)

// chaosWrite is one write of a job record (run.<id>) or of a result
// (result.<id>), as the watches saw it.
type chaosWrite struct {
	result bool // a write of result.<id>; otherwise of run.<id>
	rev    uint64
	op     jetstream.KeyValueOp
	at     time.Time // the server's store time
	state  jobs.State
	try    int // the record's (or the result's) attempt
	worker string
	// outcome is the committed result the write carries: a result.<id>
	// value, or a record's "result" field (nil when it has none).
	outcome *chaosOutcome
	why     string // the result's error and policy rule, for reports
	bad     error  // the value did not decode
}

// running reports whether w is a claim: only a claim writes a record in
// state running, and it counts its attempt in the same write.
func (w chaosWrite) running() bool { return !w.result && w.state == jobs.StateRunning }

// chaosOutcome is what makes two results the same one.
type chaosOutcome struct {
	State    jobs.State `json:"state"`
	Attempt  int        `json:"attempt"`
	Worker   string     `json:"worker"`
	ExitCode int        `json:"exit_code"`
}

func (o chaosOutcome) String() string {
	return fmt.Sprintf("%s (attempt %d, worker %q, exit code %d)", o.State, o.Attempt, o.Worker, o.ExitCode)
}

// chaosResult is what the checker reads of a result.
type chaosResult struct {
	chaosOutcome
	Error string `json:"error"`
	Rule  string `json:"rule"`
}

// why is the result's error and policy rule, for reports.
func (r chaosResult) why() string {
	if r.Rule != "" {
		return r.Error + " (rule " + r.Rule + ")"
	}
	return r.Error
}

// chaosRecord is what the checker reads of a job record. Result is the
// committed result when the record carries it: a change of format moves
// the result from result.<id> into the record, and the checker accepts
// both.
type chaosRecord struct {
	State   jobs.State   `json:"state"`
	Attempt int          `json:"attempt"`
	Worker  string       `json:"worker"`
	Result  *chaosResult `json:"result"`
}

// committed is the index in a job's history of the write that committed
// its result: the first write of either kind that carries one (-1: none
// yet).
func committed(history []chaosWrite) int {
	return slices.IndexFunc(history, func(w chaosWrite) bool { return w.outcome != nil })
}

// chaosGap is a stretch of the bucket's history the watches missed.
type chaosGap struct {
	from, to time.Time // the store times of the delivered revisions around it
	n        uint64    // revisions missed
}

// gaps lists what the watches missed: the revisions of the bucket none
// delivered. Caller holds mu.
func (h *chaosRun) gaps() []chaosGap {
	revs := slices.Sorted(maps.Keys(h.revs))
	var out []chaosGap
	for i := 1; i < len(revs); i++ {
		if a, b := revs[i-1], revs[i]; b > a+1 {
			out = append(out, chaosGap{h.revs[a], h.revs[b], b - a - 1})
		}
	}
	return out
}

// command is a job's command line: it logs its start and its end, with
// the job ID and the attempt the worker put in its environment and the
// time in nanoseconds, around body.
//
// The start line also says when the process was created, which is what
// the stale-start rule is about: the line itself comes after the shell
// and date have started, which on a loaded machine can be seconds later.
// The shell's start time since boot (/proc/$$/stat, in 1/100 s) is turned
// into wall time by the uptime read just after date's clock, so the
// estimate is never later than the truth.
func (h *chaosRun) command(id, body string) string {
	stamp := func(what string) string {
		return fmt.Sprintf(`echo "%s %s $SANDRUN_JOB_ID $SANDRUN_ATTEMPT $(date +%%s%%N)" >> %s`, what, id, h.logPath)
	}
	start := fmt.Sprintf(`n=$(date +%%s%%N); read -r u _ < /proc/uptime; read -r p < /proc/$$/stat; p=${p##*) }; set -- $p; `+
		`echo "start %s $SANDRUN_JOB_ID $SANDRUN_ATTEMPT $n $u ${20}" >> %s`, id, h.logPath)
	return start + "; " + body + "; s=$?; " + stamp("end") + "; exit $s"
}

// chaosLine is a start or an end a command logged.
type chaosLine struct {
	attempt int
	at      time.Time
	// forked is when the command's process was created (starts only; at
	// most 10 ms early, never late).
	forked time.Time
}

// commandLog reads what the commands logged: per job, the starts and the
// ends of its attempts, each in time order.
func (h *chaosRun) commandLog() (starts, ends map[string][]chaosLine) {
	starts, ends = map[string][]chaosLine{}, map[string][]chaosLine{}
	f, err := os.Open(h.logPath)
	if err != nil {
		h.t.Fatalf("command log: %v", err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		startLine := len(fields) == 7 && fields[0] == "start"
		endLine := len(fields) == 5 && fields[0] == "end"
		if !startLine && !endLine {
			h.t.Errorf("command log: torn line %q", sc.Text())
			continue
		}
		id, envID := fields[1], fields[2]
		attempt, err := strconv.Atoi(fields[3])
		if err != nil || attempt < 1 {
			h.t.Errorf("command log: %q: SANDRUN_ATTEMPT is not an attempt number", sc.Text())
			continue
		}
		if envID != id {
			h.t.Errorf("command log: %q: SANDRUN_JOB_ID is not the job's ID", sc.Text())
		}
		ns, err := strconv.ParseInt(fields[4], 10, 64)
		if err != nil {
			h.t.Errorf("command log: %q: %v", sc.Text(), err)
			continue
		}
		l := chaosLine{attempt: attempt, at: time.Unix(0, ns)}
		if fields[0] == "start" {
			if l.forked, err = forkedAt(l.at, fields[5], fields[6]); err != nil {
				h.t.Errorf("command log: %q: %v", sc.Text(), err)
				continue
			}
		}
		if fields[0] == "start" {
			starts[id] = append(starts[id], l)
		} else {
			ends[id] = append(ends[id], l)
		}
	}
	if err := sc.Err(); err != nil {
		h.t.Errorf("command log: %v", err)
	}
	for _, m := range []map[string][]chaosLine{starts, ends} {
		for _, ls := range m {
			slices.SortFunc(ls, func(a, b chaosLine) int { return a.at.Compare(b.at) })
		}
	}
	return starts, ends
}

// report logs the faults, what the watches missed, and each job's history
// and command log, for a failed seed. Caller holds mu, or the watches may
// still append (the seed is ending anyway).
func (h *chaosRun) report(starts, ends map[string][]chaosLine) {
	h.t.Logf("seed %d faults:\n%s", h.seed, strings.Join(h.faults, "\n"))
	if gaps := h.gaps(); len(gaps) > 0 {
		var b strings.Builder
		for _, g := range gaps {
			fmt.Fprintf(&b, "  %d between %s and %s\n", g.n, g.from.Format("15:04:05.000"), g.to.Format("15:04:05.000"))
		}
		h.t.Logf("seed %d: revisions the watches missed:\n%s", h.seed, b.String())
	}
	for _, j := range h.jobs {
		id := j.spec.ID
		type event struct {
			at   time.Time
			text string
		}
		var events []event
		for _, w := range h.history[id] {
			key := jobs.RunKey(id)
			if w.result {
				key = resultKey(id)
			}
			text := fmt.Sprintf("%s rev %d", key, w.rev)
			switch {
			case w.op != jetstream.KeyValuePut:
				text += " " + w.op.String()
			default:
				text += fmt.Sprintf(" %s attempt %d worker %q", w.state, w.try, w.worker)
				if w.outcome != nil {
					text += " result " + w.outcome.String()
					if w.why != "" {
						text += ": " + w.why
					}
				}
			}
			events = append(events, event{w.at, text})
		}
		for _, l := range starts[id] {
			events = append(events, event{l.at, fmt.Sprintf("command start, attempt %d", l.attempt)})
		}
		for _, l := range ends[id] {
			events = append(events, event{l.at, fmt.Sprintf("command end, attempt %d", l.attempt)})
		}
		slices.SortStableFunc(events, func(a, b event) int { return a.at.Compare(b.at) })
		var b strings.Builder
		for _, e := range events {
			fmt.Fprintf(&b, "  %s %s\n", e.at.Format("15:04:05.000000"), e.text)
		}
		cancel := "none"
		if !j.cancelAt.IsZero() {
			cancel = j.cancelAt.Format("15:04:05.000000")
		}
		h.t.Logf("%s (%s, max_attempts %d, cancel acknowledged %s):\n%s", id, j.kind, j.spec.MaxAttempts, cancel, b.String())
	}
}

// resultKey is where results were kept before they moved into the job
// record (run.<id> field "result"); the history reads both.
func resultKey(id string) string { return "result." + id }

// forkedAt turns a process's start time since boot (ticks of 1/100 s, as
// /proc/PID/stat gives it) into wall time, from the wall clock now and
// the uptime read just after it ("12345.67" seconds). Reading the uptime
// after the clock makes the result early, never late.
func forkedAt(now time.Time, uptime, ticks string) (time.Time, error) {
	sec, frac, ok := strings.Cut(uptime, ".")
	if !ok || len(frac) != 2 {
		return time.Time{}, fmt.Errorf("uptime %q: want seconds with two decimals", uptime)
	}
	up, err := strconv.ParseInt(sec+frac, 10, 64) // 1/100 s
	if err != nil {
		return time.Time{}, fmt.Errorf("uptime %q: %w", uptime, err)
	}
	start, err := strconv.ParseInt(ticks, 10, 64)
	if err != nil || start > up {
		return time.Time{}, fmt.Errorf("start time %q (uptime %s): not a time since boot", ticks, uptime)
	}
	return now.Add(-time.Duration(up-start) * 10 * time.Millisecond), nil
}
