package jobs

import (
	"crypto/rand"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// State is where a job is in its lifecycle.
type State string

// States. The last six are terminal: a job in one of them never changes
// again (except by an explicit `dlq retry`).
const (
	StateQueued    State = "queued"     // published, waiting for a worker
	StateRunning   State = "running"    // claimed under a lease
	StateRetryWait State = "retry_wait" // failed, next attempt scheduled
	StateSucceeded State = "succeeded"
	StateFailed    State = "failed"    // non-zero exit, not retried
	StateTimedOut  State = "timed_out" // killed by its timeout
	StateDenied    State = "denied"    // refused by the approval policy
	StateCanceled  State = "canceled"
	StateDead      State = "dead" // attempts spent; copied to the DLQ
)

// Terminal reports whether s is a final state.
func (s State) Terminal() bool {
	switch s {
	case StateSucceeded, StateFailed, StateTimedOut, StateDenied, StateCanceled, StateDead:
		return true
	}
	return false
}

// ParseState checks a state name given by a user.
func ParseState(s string) (State, error) {
	st := State(s)
	switch st {
	case StateQueued, StateRunning, StateRetryWait:
		return st, nil
	}
	if st.Terminal() {
		return st, nil
	}
	return "", fieldErr("state", "unknown state %q", s)
}

// Run is the job record kept at run.<id>: the spec and where it is now.
// Its KV revision is the CAS token for state changes that are not fenced
// by a lease.
type Run struct {
	Spec Spec `json:"spec"`
	// Owner is who submitted the job, from the subject its message came
	// on (never from the spec); its origin is the one the policy judged
	// under. Set by the worker that first claims it.
	Owner     Owner     `json:"owner,omitzero"`
	State     State     `json:"state"`
	Attempt   int       `json:"attempt"` // attempts claimed so far
	Worker    string    `json:"worker,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
	// NextAttemptAt is set in retry_wait.
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	// LastError is the last attempt's failure, for people.
	LastError string `json:"last_error,omitempty"`
	// Result is the committed outcome, set by the one write that ends
	// the job (its state is then terminal). The record is the job's only
	// record of truth: every change is a compare-and-set on its revision,
	// which is also what fences a stale holder off (a takeover writes the
	// record first).
	Result *Result `json:"result,omitempty"`
	// Reruns counts the times the job was run again after it ended
	// (rerun, batch retry).
	Reruns int `json:"reruns,omitempty"`
}

// OwnerString is the record's owner as ORIGIN.NAME; a record written
// before owners were recorded is AnonymousOwner's.
func (r Run) OwnerString() string {
	if r.Owner.Name == "" {
		return AnonymousOwner
	}
	return r.Owner.String()
}

// Result is the committed outcome of a job, kept in its record (Run.Result).
// It is written once, with the terminal state.
type Result struct {
	JobID      string    `json:"job_id"`
	Queue      string    `json:"queue"`
	Backend    string    `json:"backend"`
	State      State     `json:"state"`
	Attempt    int       `json:"attempt"`
	ExitCode   int       `json:"exit_code"`
	Signal     string    `json:"signal,omitempty"`
	Error      string    `json:"error,omitempty"`
	Rule       string    `json:"rule,omitempty"` // policy rule, for denied
	Worker     string    `json:"worker,omitempty"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at"`
	// Resource figures, when the backend reports them.
	WallSeconds    float64 `json:"wall_seconds"`
	UserCPUSeconds float64 `json:"user_cpu_seconds,omitempty"`
	SysCPUSeconds  float64 `json:"sys_cpu_seconds,omitempty"`
	MaxRSSBytes    int64   `json:"max_rss_bytes,omitempty"`
	Stdout         Output  `json:"stdout"`
	Stderr         Output  `json:"stderr"`
	// Policy is the approval decision the command ran (or was denied)
	// under.
	Policy *PolicyRecord `json:"policy,omitempty"`
}

// PolicyRecord is an approval decision as recorded with a job.
type PolicyRecord struct {
	Decision  string        `json:"decision"` // approve or deny
	Mode      string        `json:"mode"`     // effective mode
	Dangerous bool          `json:"dangerous"`
	Capped    bool          `json:"capped,omitempty"` // the worker ceiling lowered the requested mode
	Reason    string        `json:"reason,omitempty"`
	Matches   []PolicyMatch `json:"matches,omitempty"`
	// MatchesOmitted counts the matches past the first MaxPolicyMatches,
	// which the record leaves out; a match's Text is cut at
	// MaxPolicyMatchText bytes. The record must fit in the job record's
	// one message with the spec.
	MatchesOmitted int `json:"matches_omitted,omitempty"`
	// Shell is the dialect the command was read in (sh or bash).
	Shell string `json:"shell,omitempty"`
}

// Bounds of a recorded policy decision: the terminal record carries the
// spec and the result in one message (1 MiB by default). A 120 KiB command
// of repeated dangerous commands made 7,926 matches, filling most of it;
// a longer text per match would pass the limit, and the denial could
// never be committed.
const (
	MaxPolicyMatches   = 100
	MaxPolicyMatchText = 1 << 10
)

// PolicyMatch is one rule that fired, with where in the command.
type PolicyMatch struct {
	Rule string `json:"rule"`
	Text string `json:"text"`
	Pos  int    `json:"pos"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
	Via  string `json:"via,omitempty"`
}

// Output describes one output stream of an attempt: its full size and
// digest, the object holding it, and a bounded head and tail.
type Output struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	// Subject holds the full output in the OUTPUTS stream (chunks of
	// it, Stored bytes when Capped, else Size), kept as long as the job.
	Subject string `json:"subject,omitempty"`
	// Object names the full output in the outputs object store, for
	// results committed before the OUTPUTS stream.
	Object string `json:"object,omitempty"`
	Head   string `json:"head,omitempty"`
	Tail   string `json:"tail,omitempty"`
	// Truncated is true when Head+Tail do not hold the whole output.
	Truncated bool `json:"truncated,omitempty"`
	// Capped is true when the stored object holds only the first Stored
	// bytes: the output passed the worker's output_max. Size and SHA256
	// still describe all of it.
	Capped bool  `json:"capped,omitempty"`
	Stored int64 `json:"stored,omitempty"`
}

// ExitCodeFor maps a terminal result to the exit code `sandrun submit
// --wait` uses: the job's own code, 124 for a timeout (as timeout(1)
// does), 125 for a job that never ran its command to completion.
func (r Result) ExitCodeFor() int {
	switch r.State {
	case StateSucceeded, StateFailed:
		return r.ExitCode
	case StateDead:
		if r.ExitCode > 0 {
			return r.ExitCode
		}
		return 125
	case StateTimedOut:
		return 124
	case StateCanceled:
		return 130
	}
	return 125
}

// IDTime is when a job ID made by NewID was made (a batch item's too);
// false for an ID of the submitter's own choosing.
func IDTime(id string) (time.Time, bool) {
	base, _, _ := strings.Cut(id, ".")
	u, err := ulid.ParseStrict(base)
	if err != nil {
		return time.Time{}, false
	}
	return ulid.Time(u.Time()), true
}

// NewID returns a new sortable job ID.
func NewID(now time.Time) string {
	return ulid.MustNew(ulid.Timestamp(now), rand.Reader).String()
}
