package scheduler

import (
	"testing"
	"time"
)

func TestSlotsAcrossMadridDST(t *testing.T) {
	t.Parallel()
	madrid, err := time.LoadLocation("Europe/Madrid")
	if err != nil {
		t.Fatal(err)
	}
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name, spec string
		from       time.Time
		want       []string // instants in UTC
	}{{
		// 2026-03-29 02:00 CET -> 03:00 CEST: 02:30 does not exist; it
		// fires at 03:00 CEST (01:00Z), then normally.
		name: "daily 02:30 spring forward", spec: "30 2 * * *", from: utc("2026-03-27T12:00:00Z"),
		want: []string{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"},
	}, {
		// 2026-10-25 03:00 CEST -> 02:00 CET: 02:30 happens twice; it
		// fires once, at the first (CEST) occurrence.
		name: "daily 02:30 fall back", spec: "30 2 * * *", from: utc("2026-10-23T12:00:00Z"),
		want: []string{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"},
	}, {
		name: "hourly spring forward", spec: "0 * * * *", from: utc("2026-03-28T23:30:00Z"),
		want: []string{"2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"},
	}, {
		// Hourly keeps both 02:00s at fall-back: two hours of elapsed time.
		name: "hourly fall back", spec: "0 * * * *", from: utc("2026-10-24T22:30:00Z"),
		want: []string{"2026-10-24T23:00:00Z", "2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"},
	}, {
		name: "every 30m spring forward", spec: "*/30 * * * *", from: utc("2026-03-29T00:10:00Z"),
		want: []string{"2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z"},
	}, {
		name: "@every ignores wall clocks", spec: "@every 90m", from: utc("2026-10-24T23:00:00Z"),
		want: []string{"2026-10-25T00:30:00Z", "2026-10-25T02:00:00Z", "2026-10-25T03:30:00Z"},
	}, {
		name: "daily 01:30 unaffected", spec: "30 1 * * *", from: utc("2026-03-28T12:00:00Z"),
		want: []string{"2026-03-29T00:30:00Z", "2026-03-29T23:30:00Z"},
	}}
	for _, tc := range cases {
		s, err := newSlotter(tc.spec, madrid)
		if err != nil {
			t.Fatal(err)
		}
		at := tc.from
		for i, w := range tc.want {
			at = s.Next(at)
			if !at.Equal(utc(w)) {
				t.Errorf("%s: slot %d = %s (%s), want %s", tc.name, i, at.UTC().Format(time.RFC3339), at.Format(time.RFC3339), w)
				break
			}
		}
	}
}

func TestSlotterRejectsSubSecondEvery(t *testing.T) {
	t.Parallel()
	if _, err := newSlotter("@every 500ms", time.UTC); err == nil {
		t.Fatal("@every 500ms accepted")
	}
}

// Next's fast path (no clock change near t and its slot) gives the slot
// the walk across clock changes gives: around each clock change of a
// year, and weekly in between, in zones with and without DST.
func TestSlotterFastPathMatchesTheWalk(t *testing.T) {
	t.Parallel()
	specs := []string{"30 2 * * *", "0 * * * *", "*/30 * * * *", "7 * * * * *", "0 3 1 * *", "@daily", "15 1 * * 0"}
	for _, zone := range []string{"UTC", "Europe/Madrid", "Australia/Lord_Howe"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
		var times []time.Time
		for at := from; at.Year() < 2027; at = at.Add(7 * 24 * time.Hour) {
			times = append(times, at)
		}
		for at := from; ; {
			_, end := at.ZoneBounds()
			if end.IsZero() || end.Year() > 2026 {
				break
			}
			for d := -3 * time.Hour; d <= 3*time.Hour; d += 20 * time.Minute {
				times = append(times, end.Add(d))
			}
			at = end
		}
		for _, spec := range specs {
			s, err := newSlotter(spec, loc)
			if err != nil {
				t.Fatal(err)
			}
			for _, at := range times {
				if fast, walk := s.Next(at), s.nextAcrossChanges(at); !fast.Equal(walk) {
					t.Fatalf("%s in %s after %s: %s, the walk gives %s", spec, zone, at, fast, walk)
				}
			}
		}
	}
}
