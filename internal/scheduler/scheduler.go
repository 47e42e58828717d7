// Package scheduler turns cron schedules into jobs. One scheduler leads
// at a time (leader election on the elections bucket); each fire submits a
// job whose ID is derived from the schedule name and the slot time, so a
// slot fired twice (two leaders across a failover) is one job.
package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/sandrun/sandrun/internal/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/lease"
	"github.com/sandrun/sandrun/internal/metrics"
)

// Schedule is one cron entry.
type Schedule struct {
	// Name is unique and part of every job ID the schedule creates.
	Name string `json:"name"`
	// Cron is a robfig/cron spec: 5 fields, 6 with seconds, or a
	// descriptor (@hourly, @every 10m).
	Cron string `json:"cron"`
	// TimeZone is an IANA zone name; default UTC.
	TimeZone string `json:"time_zone,omitempty"`
	// Job is the job to submit at each slot (origin defaults to cron).
	Job jobs.Spec `json:"job"`
}

var nameRE = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// compiled is a validated schedule.
type compiled struct {
	Schedule
	sched cron.Schedule
	loc   *time.Location
}

// Compile validates schedules; errors name the schedule and field.
func compile(list []Schedule) ([]compiled, error) {
	var out []compiled
	seen := map[string]bool{}
	var errs []error
	for i, s := range list {
		field := fmt.Sprintf("schedules[%d]", i)
		if !nameRE.MatchString(s.Name) {
			errs = append(errs, fmt.Errorf("%s.name: %q is not a name (1-64 of a-z 0-9 _ -)", field, s.Name))
			continue
		}
		field = "schedules." + s.Name
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("%s: duplicate name", field))
			continue
		}
		seen[s.Name] = true
		loc := time.UTC
		if s.TimeZone != "" {
			l, err := time.LoadLocation(s.TimeZone)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.time_zone: %w", field, err))
				continue
			}
			loc = l
		}
		sched, err := parser.Parse(s.Cron)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.cron: %w", field, err))
			continue
		}
		if s.Job.Origin == "" {
			s.Job.Origin = jobs.OriginCron
		}
		spec := s.Job.WithDefaults()
		if s.Job.ID != "" {
			errs = append(errs, fmt.Errorf("%s.job.id: must be empty (each fire gets its own id)", field))
			continue
		}
		if err := spec.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s.job.%w", field, err))
			continue
		}
		out = append(out, compiled{Schedule: s, sched: sched, loc: loc})
	}
	return out, errors.Join(errs...)
}

// DecodeFile reads a schedules file: YAML (or JSON) with a top-level
// `schedules:` list. Unknown fields are errors.
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
	if err := json.Unmarshal(j, &f); err != nil {
		return nil, fmt.Errorf("schedules: %w", err)
	}
	var out []Schedule
	for i, raw := range f.Schedules {
		var s struct {
			Name     string          `json:"name"`
			Cron     string          `json:"cron"`
			TimeZone string          `json:"time_zone"`
			Job      json.RawMessage `json:"job"`
		}
		if err := strict(raw, &s); err != nil {
			return nil, fmt.Errorf("schedules[%d]: %w", i, err)
		}
		if len(s.Job) == 0 {
			return nil, fmt.Errorf("schedules[%d].job: required", i)
		}
		var spec jobs.Spec
		if err := strict(s.Job, &spec); err != nil {
			return nil, fmt.Errorf("schedules[%d].job: %w", i, err)
		}
		out = append(out, Schedule{Name: s.Name, Cron: s.Cron, TimeZone: s.TimeZone, Job: spec})
	}
	if _, err := compile(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Scheduler fires schedules while it leads.
type Scheduler struct {
	scheds []compiled
	client *client.Client
	store  *jobs.Store
	log    *slog.Logger
	m      *metrics.Metrics
	id     string
	ttl    time.Duration
	now    func() time.Time
}

// Config of a scheduler.
type Config struct {
	Schedules   []Schedule
	ID          string        // candidate name
	ElectionTTL time.Duration // default 15s
}

// New validates cfg.
func New(cfg Config, store *jobs.Store, m *metrics.Metrics, log *slog.Logger) (*Scheduler, error) {
	c, err := compile(cfg.Schedules)
	if err != nil {
		return nil, err
	}
	if cfg.ElectionTTL == 0 {
		cfg.ElectionTTL = 15 * time.Second
	}
	return &Scheduler{scheds: c, client: client.New(store), store: store, log: log, m: m, id: cfg.ID, ttl: cfg.ElectionTTL, now: time.Now}, nil
}

// Run campaigns for leadership and fires schedules while leading, until
// ctx is done.
func (s *Scheduler) Run(ctx context.Context) {
	el := &lease.Elector{JS: s.store.JS, KV: s.store.Elections, Role: "scheduler", ID: s.id, TTL: s.ttl, Logger: s.log,
		OnChange: func(l bool) { s.m.Leader.WithLabelValues("scheduler").Set(map[bool]float64{true: 1}[l]) }}
	el.Run(ctx, s.lead)
}

func (s *Scheduler) lead(ctx context.Context) {
	done := make(chan struct{}, len(s.scheds))
	for _, c := range s.scheds {
		go func() { defer func() { done <- struct{}{} }(); s.loop(ctx, c) }()
	}
	for range s.scheds {
		<-done
	}
}

// loop fires one schedule's slots from now on.
func (s *Scheduler) loop(ctx context.Context, c compiled) {
	next := c.sched.Next(s.now().In(c.loc))
	for {
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		s.fire(ctx, c, next)
		next = c.sched.Next(next)
	}
}

// SlotID is the job ID of schedule name's fire at slot.
func SlotID(name string, slot time.Time) string {
	return fmt.Sprintf("cron-%s-%d", name, slot.Unix())
}

func (s *Scheduler) fire(ctx context.Context, c compiled, slot time.Time) {
	spec := c.Job
	spec.ID = SlotID(c.Name, slot)
	if spec.Labels == nil {
		spec.Labels = map[string]string{}
	}
	spec.Labels["schedule"] = c.Name
	_, err := s.client.Submit(ctx, spec)
	switch {
	case errors.Is(err, jobs.ErrExists):
		s.log.Debug("slot already fired", "schedule", c.Name, "slot", slot)
	case err != nil:
		s.log.Error("fire failed", "schedule", c.Name, "slot", slot, "err", err)
	default:
		s.log.Info("fired", "schedule", c.Name, "slot", slot, "job", spec.ID)
	}
}

func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
