package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// slotter yields a schedule's slots in its time zone, with the DST rules
// of classic cron, which robfig/cron alone does not follow (it skips a
// daily 02:30 on the spring-forward day and fires it twice at fall-back):
//
//   - A wall-clock time that does not exist (clocks go forward) fires once,
//     at the first instant after the gap.
//   - A wall-clock time that happens twice (clocks go back) fires once, at
//     its first occurrence, for schedules with fixed hours; schedules whose
//     hour field is a wildcard or a step fire in both hours, since those are
//     two distinct hours of elapsed time.
//
// Slots are found on the wall clock (the cron spec evaluated in a zone
// without DST) and then mapped to instants in the schedule's zone.
// @every schedules are intervals of elapsed time and ignore wall clocks.
type slotter struct {
	sched     cron.Schedule
	loc       *time.Location
	every     bool
	fixedHour bool
}

func newSlotter(spec string, loc *time.Location) (*slotter, error) {
	if rest, ok := strings.CutPrefix(strings.TrimSpace(spec), "@every "); ok {
		// robfig/cron silently rounds sub-second intervals up to 1s.
		if d, err := time.ParseDuration(strings.TrimSpace(rest)); err == nil && d < time.Second {
			return nil, fmt.Errorf("@every interval must be at least 1s, got %s", d)
		}
	}
	s, err := parser.Parse(spec)
	if err != nil {
		return nil, err
	}
	if cd, ok := s.(cron.ConstantDelaySchedule); ok {
		if cd.Delay < time.Second {
			return nil, fmt.Errorf("@every interval must be at least 1s, got %s", cd.Delay)
		}
		return &slotter{sched: s, loc: loc, every: true}, nil
	}
	return &slotter{sched: s, loc: loc, fixedHour: hasFixedHour(spec)}, nil
}

// hasFixedHour reports whether spec names particular hours (as opposed to
// every hour or a step of hours).
func hasFixedHour(spec string) bool {
	switch strings.TrimSpace(spec) {
	case "@hourly":
		return false
	case "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually":
		return true
	}
	f := strings.Fields(spec)
	var hour string
	switch len(f) {
	case 5:
		hour = f[1]
	case 6:
		hour = f[2]
	default:
		return false
	}
	return !strings.ContainsAny(hour, "*/")
}

// Next returns the first slot strictly after t, or the zero time if the
// spec has none (an impossible date such as 30 February).
func (s *slotter) Next(t time.Time) time.Time {
	if s.every {
		return s.sched.Next(t)
	}
	t = t.In(s.loc)
	// Away from clock changes, the wall clock is the instant at a fixed
	// offset: when the zone keeps t's offset from two hours before t to
	// two hours after the slot, the slot is the spec's next reading.
	_, end := t.Add(-2 * time.Hour).ZoneBounds()
	_, off := t.Zone()
	if w := s.sched.Next(wall(t)); !w.IsZero() {
		if inst := w.Add(-time.Duration(off) * time.Second).In(s.loc); end.IsZero() || inst.Add(2*time.Hour).Before(end) {
			return inst
		}
	}
	return s.nextAcrossChanges(t)
}

// nextAcrossChanges is Next for a t near a clock change (or whose next
// slot is beyond one).
func (s *slotter) nextAcrossChanges(t time.Time) time.Time {
	t = t.In(s.loc)
	// Start two hours of wall clock early: at fall-back, the wall clock of
	// t may be an hour behind slots still to come.
	w := wall(t).Add(-2 * time.Hour)
	var best time.Time
	for range 10_000 {
		w = s.sched.Next(w)
		if w.IsZero() {
			break
		}
		if !best.IsZero() && w.After(wall(best).Add(2*time.Hour)) {
			break
		}
		for _, inst := range s.instants(w) {
			if inst.After(t) && (best.IsZero() || inst.Before(best)) {
				best = inst
			}
		}
	}
	return best
}

// wall returns t's wall-clock reading as the same reading in UTC.
func wall(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	return time.Date(y, mo, d, h, mi, sec, 0, time.UTC)
}

// instants maps wall-clock reading w (in UTC form) to the instants in
// s.loc that show it: usually one, two at fall-back, and, for a reading in
// a spring-forward gap, the first instant after the gap.
func (s *slotter) instants(w time.Time) []time.Time {
	var offsets []int
	for _, probe := range []time.Duration{-14 * time.Hour, 0, 14 * time.Hour} {
		_, off := w.Add(probe).In(s.loc).Zone()
		if !slices.Contains(offsets, off) {
			offsets = append(offsets, off)
		}
	}
	var out []time.Time
	for _, off := range offsets {
		inst := w.Add(-time.Duration(off) * time.Second).In(s.loc)
		if wall(inst).Equal(w) && !slices.ContainsFunc(out, inst.Equal) {
			out = append(out, inst)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	switch {
	case len(out) == 0:
		// In a gap: read with the offset before the gap, w lands after
		// the transition; the transition is the first instant after it.
		_, before := w.Add(-14 * time.Hour).In(s.loc).Zone()
		start, _ := w.Add(-time.Duration(before) * time.Second).In(s.loc).ZoneBounds()
		return []time.Time{start}
	case len(out) > 1 && s.fixedHour:
		return out[:1]
	}
	return out
}
