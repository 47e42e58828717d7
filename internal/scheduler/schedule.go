// Package scheduler turns cron schedules into jobs. Any number of
// schedulers run; one leads (a lease in the elections bucket) and fires,
// every slot due on the same second as one burst of asynchronous
// publishes. Each slot's job ID is derived from the schedule name and the
// slot time and is the dispatch message's Nats-Msg-Id, and each
// schedule's last fired slot is stored (after the burst), so a failover
// neither drops nor repeats a slot: the new leader catches up the slots
// missed in between, and a slot fired again because its record had not
// been stored yet is a duplicate message, which JetStream drops.
package scheduler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sandrun/sandrun/internal/jobs"
)

// Overlap says what a slot does while the schedule's previous run is
// still going.
type Overlap string

// Overlap policies.
const (
	OverlapAllow   Overlap = "allow"   // run anyway
	OverlapForbid  Overlap = "forbid"  // skip this slot (counted)
	OverlapReplace Overlap = "replace" // cancel the previous run, then run
)

// Catch-up policies for slots missed while no scheduler led.
const (
	CatchupAll    = "all"    // every missed slot inside the window, oldest first
	CatchupLatest = "latest" // only the most recent missed slot inside the window
)

// DefaultCatchupWindow bounds how old a missed slot may be and still fire.
const DefaultCatchupWindow = 5 * time.Minute

// Schedule is one cron entry, as written in a schedules file or stored
// in the schedules bucket.
type Schedule struct {
	// Name is unique; it is part of every job ID the schedule creates.
	Name string `json:"name"`
	// Cron is a robfig/cron spec: 5 fields, 6 with seconds, or a
	// descriptor (@hourly, @every 90s).
	Cron string `json:"cron"`
	// TimeZone is an IANA zone name; default UTC.
	TimeZone string `json:"time_zone,omitempty"`
	// Overlap: allow (default), forbid or replace.
	Overlap Overlap `json:"overlap,omitempty"`
	// CatchupWindow: missed slots younger than this fire when a scheduler
	// takes over; older ones are counted as missed. Default 5m; "0s"
	// disables catch-up.
	CatchupWindow *jobs.Duration `json:"catchup_window,omitempty"`
	// Catchup: all (default) or latest.
	Catchup string `json:"catchup,omitempty"`
	// Suspended schedules fire nothing; slots passed while suspended are
	// not caught up on resume.
	Suspended bool `json:"suspended,omitempty"`
	// Approval is the approval mode the schedule's jobs get (the opt-in
	// of cron jobs into approve or allowlist); default: the job's own.
	Approval string `json:"approval,omitempty"`
	// Job is the job template; its origin defaults to cron.
	Job jobs.Spec `json:"job"`
}

// Window returns the effective catch-up window.
func (s Schedule) Window() time.Duration {
	if s.CatchupWindow == nil {
		return DefaultCatchupWindow
	}
	return s.CatchupWindow.D()
}

var nameRE = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// compiled is a validated schedule with its slot source.
type compiled struct {
	Schedule
	slots *slotter
}

// compile validates s; errors name the schedule and the field.
func compile(s Schedule) (compiled, error) {
	if !nameRE.MatchString(s.Name) {
		return compiled{}, fmt.Errorf("name: %q is not a schedule name (1-64 of a-z 0-9 _ -)", s.Name)
	}
	field := "schedules." + s.Name
	loc := time.UTC
	if s.TimeZone != "" {
		l, err := time.LoadLocation(s.TimeZone)
		if err != nil {
			return compiled{}, fmt.Errorf("%s.time_zone: %w", field, err)
		}
		loc = l
	}
	slots, err := newSlotter(s.Cron, loc)
	if err != nil {
		return compiled{}, fmt.Errorf("%s.cron: %w", field, err)
	}
	switch s.Overlap {
	case "", OverlapAllow, OverlapForbid, OverlapReplace:
	default:
		return compiled{}, fmt.Errorf("%s.overlap: %q is not allow, forbid or replace", field, s.Overlap)
	}
	switch s.Catchup {
	case "", CatchupAll, CatchupLatest:
	default:
		return compiled{}, fmt.Errorf("%s.catchup: %q is not all or latest", field, s.Catchup)
	}
	if s.CatchupWindow != nil && s.CatchupWindow.D() < 0 {
		return compiled{}, fmt.Errorf("%s.catchup_window: must be >= 0", field)
	}
	switch s.Approval {
	case "", "deny", "approve", "allowlist":
	default:
		return compiled{}, fmt.Errorf("%s.approval: %q is not deny, approve or allowlist", field, s.Approval)
	}
	if s.Job.ID != "" {
		return compiled{}, fmt.Errorf("%s.job.id: must be empty (each slot gets its own id)", field)
	}
	if err := jobTemplate(s, time.Unix(0, 0)).Validate(); err != nil {
		return compiled{}, fmt.Errorf("%s.job.%w", field, err)
	}
	if s.Overlap == "" {
		s.Overlap = OverlapAllow
	}
	if s.Catchup == "" {
		s.Catchup = CatchupAll
	}
	return compiled{Schedule: s, slots: slots}, nil
}

// jobTemplate is the job a schedule submits for slot (its ID not set).
func jobTemplate(s Schedule, slot time.Time) jobs.Spec {
	spec := s.Job
	if spec.Origin == "" {
		spec.Origin = jobs.OriginCron
	}
	if s.Approval != "" {
		spec.Approval = s.Approval
	}
	spec = spec.WithDefaults()
	if spec.Labels == nil {
		spec.Labels = map[string]string{}
	}
	spec.Labels["schedule"] = s.Name
	spec.Labels["slot"] = slot.UTC().Format("2006-01-02T15-04-05Z")
	return spec
}

// SlotID is the job ID of schedule name's slot.
func SlotID(name string, slot time.Time) string {
	return fmt.Sprintf("cron-%s-%d", name, slot.Unix())
}

// Validate checks a list of schedules (unique names, each valid).
func Validate(list []Schedule) error {
	seen := map[string]bool{}
	var errs []error
	for i, s := range list {
		if !nameRE.MatchString(s.Name) {
			errs = append(errs, fmt.Errorf("schedules[%d].name: %q is not a schedule name (1-64 of a-z 0-9 _ -)", i, s.Name))
			continue
		}
		if _, err := compile(s); err != nil {
			errs = append(errs, fmt.Errorf("schedules[%d]: %w", i, err))
			continue
		}
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("schedules.%s: duplicate name", s.Name))
		}
		seen[s.Name] = true
	}
	return errors.Join(errs...)
}

// DecodeFile reads a schedules file: YAML (or JSON) with a top-level
// `schedules:` list. Unknown fields are errors; every schedule is
// validated.
func DecodeFile(data []byte) ([]Schedule, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("schedules: %w", err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var f struct {
		Schedules []json.RawMessage `json:"schedules"`
	}
	if err := strict(j, &f); err != nil {
		return nil, fmt.Errorf("schedules file: %w", err)
	}
	out := make([]Schedule, 0, len(f.Schedules))
	for i, raw := range f.Schedules {
		var s Schedule
		if err := strict(raw, &s); err != nil {
			return nil, fmt.Errorf("schedules[%d]: %w", i, err)
		}
		out = append(out, s)
	}
	if err := Validate(out); err != nil {
		return nil, err
	}
	return out, nil
}

func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// NextSlot returns s's first slot after t, in s's time zone.
func NextSlot(s Schedule, t time.Time) (time.Time, error) {
	c, err := compile(s)
	if err != nil {
		return time.Time{}, err
	}
	return c.slots.Next(t), nil
}
