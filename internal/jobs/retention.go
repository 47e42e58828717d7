package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Retention is how long a finished job is kept, by the state it ended in:
// its record (spec, result, small output inline) and its stored output go
// together when the time is up. The server enforces it: the write that
// ends a record carries a per-message TTL, so no scan ever looks for
// what to delete, and nothing a finished job left behind outlives it.
//
// Events (lifecycle events and live output chunks) serve those who
// follow a job while it runs (a finished job is read from its record);
// they go after Events, whatever the job's state.
type Retention struct {
	Succeeded time.Duration
	Failed    time.Duration
	TimedOut  time.Duration
	Canceled  time.Duration
	Denied    time.Duration
	Dead      time.Duration
	Events    time.Duration
	// Queues overrides the states' times for jobs of a queue; a zero
	// field keeps the deployment's.
	Queues map[string]Retention
}

// DefaultRetention is what a deployment keeps unless told otherwise:
// successes briefly (River's completed-job default), what someone may
// have to look into for a week, and dead jobs, whose DLQ entries an
// operator acts on, for two.
func DefaultRetention() Retention {
	return Retention{
		Succeeded: 24 * time.Hour,
		Failed:    7 * 24 * time.Hour,
		TimedOut:  7 * 24 * time.Hour,
		Canceled:  3 * 24 * time.Hour,
		Denied:    7 * 24 * time.Hour,
		Dead:      14 * 24 * time.Hour,
		Events:    time.Hour,
	}
}

// minTTL is the server's smallest per-message TTL.
const minTTL = time.Second

// retentionFields names the fields in configuration order.
var retentionFields = []string{"succeeded", "failed", "timed_out", "canceled", "denied", "dead", "events"}

func (r *Retention) field(name string) *time.Duration {
	switch name {
	case "succeeded":
		return &r.Succeeded
	case "failed":
		return &r.Failed
	case "timed_out":
		return &r.TimedOut
	case "canceled":
		return &r.Canceled
	case "denied":
		return &r.Denied
	case "dead":
		return &r.Dead
	case "events":
		return &r.Events
	}
	return nil
}

// WithDefaults fills zero fields from DefaultRetention. Events defaults to
// the shorter of an hour and the succeeded time: events never outlive the
// records they describe.
func (r Retention) WithDefaults() Retention {
	d := DefaultRetention()
	eventsSet := r.Events != 0
	for _, f := range retentionFields {
		if p := r.field(f); *p == 0 {
			*p = *d.field(f)
		}
	}
	if !eventsSet {
		r.Events = min(r.Events, r.Succeeded)
	}
	return r
}

// Validate checks every time is at least the server's one-second minimum,
// naming the field (retention.queues.NAME.FIELD for a queue's).
func (r Retention) Validate() error {
	var errs []error
	check := func(prefix string, x Retention, zeroOK bool) {
		for _, f := range retentionFields {
			d := *x.field(f)
			if (d == 0 && zeroOK) || d >= minTTL {
				continue
			}
			errs = append(errs, fmt.Errorf("%s.%s: must be at least %s, got %s", prefix, f, minTTL, d))
		}
	}
	check("retention", r, false)
	for _, q := range slices.Sorted(maps.Keys(r.Queues)) {
		if !queueRE.MatchString(q) {
			errs = append(errs, fmt.Errorf("retention.queues: queue %q: must be 1-64 characters of a-z 0-9 _ -", q))
		}
		if r.Queues[q].Events != 0 {
			errs = append(errs, fmt.Errorf("retention.queues.%s.events: events are kept per deployment, not per queue", q))
		}
		check("retention.queues."+q, r.Queues[q], true)
	}
	return errors.Join(errs...)
}

// For is how long a job of queue that ended in state s is kept; 0 for a
// state that is not final.
func (r Retention) For(queue string, s State) time.Duration {
	if !s.Terminal() {
		return 0
	}
	name := string(s)
	if q, ok := r.Queues[queue]; ok {
		if d := *q.field(name); d != 0 {
			return d
		}
	}
	return *r.field(name)
}

// Longest is the longest time any finished job is kept: the buckets' and
// streams' own age limit, behind the per-message TTLs.
func (r Retention) Longest() time.Duration {
	var m time.Duration
	for _, x := range append([]Retention{r}, slices.Collect(maps.Values(r.Queues))...) {
		for _, f := range retentionFields {
			m = max(m, *x.field(f))
		}
	}
	return m
}

// Shortest is the shortest time a finished job is kept.
func (r Retention) Shortest() time.Duration {
	m := r.Succeeded
	for _, x := range append([]Retention{r}, slices.Collect(maps.Values(r.Queues))...) {
		for _, f := range retentionFields[:6] {
			if d := *x.field(f); d != 0 {
				m = min(m, d)
			}
		}
	}
	return m
}

// UnmarshalYAML takes either one duration for every state
// (`retention: 168h`, as before states had their own) or a mapping of
// states, events and queues.
func (r *Retention) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var d time.Duration
		if err := n.Decode(&d); err != nil {
			return fmt.Errorf("retention: want a duration or a mapping of states: %w", err)
		}
		for _, f := range retentionFields[:6] {
			*r.field(f) = d
		}
		return nil
	}
	var m map[string]yaml.Node
	if err := n.Decode(&m); err != nil {
		return fmt.Errorf("retention: want a duration or a mapping of states: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if k == "queues" {
			var qs map[string]Retention
			if err := v.Decode(&qs); err != nil {
				return fmt.Errorf("retention.queues: %w", err)
			}
			r.Queues = qs
			continue
		}
		p := r.field(k)
		if p == nil {
			return fmt.Errorf("retention.%s: unknown state (want %v or queues)", k, retentionFields)
		}
		if err := v.Decode(p); err != nil {
			return fmt.Errorf("retention.%s: %w", k, err)
		}
	}
	return nil
}

// Set reads a flag's value: one duration for every state, or
// STATE=DURATION pairs separated by commas (events too).
func (r *Retention) Set(s string) error {
	if d, err := time.ParseDuration(s); err == nil {
		for _, f := range retentionFields[:6] {
			*r.field(f) = d
		}
		return nil
	}
	for pair := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		p := r.field(k)
		if !ok || p == nil {
			return fmt.Errorf("retention: %q: want a duration or STATE=DURATION with a state of %v", pair, retentionFields)
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("retention.%s: %w", k, err)
		}
		*p = d
	}
	return nil
}

// String is the flag's form of r (its states).
func (r *Retention) String() string {
	if r == nil {
		return ""
	}
	var parts []string
	for _, f := range retentionFields {
		if d := *r.field(f); d != 0 {
			parts = append(parts, f+"="+d.String())
		}
	}
	return strings.Join(parts, ",")
}

// metadataRetention is the bucket metadata key holding the deployment's
// retention: every component reads it from the jobstate bucket, so the
// one that ends a job (a worker, the reaper, a refusal) applies the same
// times whatever its own configuration says.
const metadataRetention = "sandrun_retention"

type retentionJSON struct {
	States map[string]string            `json:"states"`
	Queues map[string]map[string]string `json:"queues,omitempty"`
}

func (r Retention) durations() map[string]string {
	m := map[string]string{}
	for _, f := range retentionFields {
		if d := *r.field(f); d != 0 {
			m[f] = d.String()
		}
	}
	return m
}

func (r Retention) metadata() string {
	j := retentionJSON{States: r.durations()}
	for q, x := range r.Queues {
		if j.Queues == nil {
			j.Queues = map[string]map[string]string{}
		}
		j.Queues[q] = x.durations()
	}
	b, _ := json.Marshal(j)
	return string(b)
}

func parseRetention(s string) (Retention, error) {
	var j retentionJSON
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return Retention{}, err
	}
	read := func(m map[string]string) (Retention, error) {
		var r Retention
		for k, v := range m {
			p := r.field(k)
			if p == nil {
				continue // a state of a newer version
			}
			d, err := time.ParseDuration(v)
			if err != nil {
				return r, fmt.Errorf("%s: %w", k, err)
			}
			*p = d
		}
		return r, nil
	}
	r, err := read(j.States)
	if err != nil {
		return r, err
	}
	for q, m := range j.Queues {
		x, err := read(m)
		if err != nil {
			return r, fmt.Errorf("queue %s: %w", q, err)
		}
		if r.Queues == nil {
			r.Queues = map[string]Retention{}
		}
		r.Queues[q] = x
	}
	return r.WithDefaults(), nil
}
