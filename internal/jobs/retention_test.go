package jobs_test

import (
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

func TestRetentionConfig(t *testing.T) {
	const day = 24 * time.Hour
	var cfg struct {
		Retention jobs.Retention `yaml:"retention"`
	}
	doc := `
retention:
  succeeded: 1h
  dead: 720h
  queues:
    eval: {succeeded: 10m}
    nightly: 48h
`
	if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
		t.Fatal(err)
	}
	r := cfg.Retention.WithDefaults()
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		queue string
		state jobs.State
		want  time.Duration
	}{
		{"default", jobs.StateSucceeded, time.Hour},
		{"default", jobs.StateFailed, 7 * day},
		{"default", jobs.StateCanceled, 3 * day},
		{"default", jobs.StateDead, 30 * day},
		{"eval", jobs.StateSucceeded, 10 * time.Minute},
		{"eval", jobs.StateFailed, 7 * day}, // not overridden
		{"nightly", jobs.StateFailed, 2 * day},
		{"default", jobs.StateRunning, 0}, // not final: no TTL
	} {
		if got := r.For(tc.queue, tc.state); got != tc.want {
			t.Errorf("%s %s: %s, want %s", tc.queue, tc.state, got, tc.want)
		}
	}
	if r.Events != time.Hour {
		t.Errorf("events: %s, want an hour", r.Events)
	}
	if e := (jobs.Retention{Succeeded: 20 * time.Minute}).WithDefaults().Events; e != 20*time.Minute {
		t.Errorf("events with succeeded jobs kept 20m: %s, want 20m (never longer than the records)", e)
	}
	if r.Longest() != 30*day || r.Shortest() != 10*time.Minute {
		t.Errorf("longest %s shortest %s", r.Longest(), r.Shortest())
	}

	// One duration: every state.
	if err := yaml.Unmarshal([]byte("retention: 168h"), &cfg); err != nil {
		t.Fatal(err)
	}
	if d := cfg.Retention.WithDefaults().For("q", jobs.StateSucceeded); d != 7*day {
		t.Errorf("scalar retention: succeeded %s", d)
	}

	// Errors name the field.
	for doc, want := range map[string]string{
		"retention: {finished: 1h}":               "retention.finished: unknown state",
		"retention: {succeeded: soon}":            "retention.succeeded",
		"retention: {succeeded: 10ms}":            "retention.succeeded: must be at least 1s",
		"retention: {queues: {Bad: 1h}}":          `retention.queues: queue "Bad"`,
		"retention: {queues: {q: {events: 1h}}}":  "retention.queues.q.events",
		"retention: {queues: {q: {failed: -1h}}}": "retention.queues.q.failed: must be at least 1s",
	} {
		var c struct {
			Retention jobs.Retention `yaml:"retention"`
		}
		err := yaml.Unmarshal([]byte(doc), &c)
		if err == nil {
			err = c.Retention.WithDefaults().Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", doc, err, want)
		}
	}

	// The flag's form.
	var f jobs.Retention
	if err := f.Set("succeeded=2h,dead=1000h"); err != nil || f.Succeeded != 2*time.Hour || f.Dead != 1000*time.Hour {
		t.Errorf("flag: %+v %v", f, err)
	}
	if err := f.Set("forever=1h"); err == nil || !strings.Contains(err.Error(), "forever") {
		t.Errorf("flag with an unknown state: %v", err)
	}
}

// TestRetentionTravelsWithTheLayout: a client that opens the layout reads
// the retention the daemons set up, whatever its own configuration.
func TestRetentionTravelsWithTheLayout(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	want := jobs.Retention{Succeeded: 30 * time.Minute, Queues: map[string]jobs.Retention{"eval": {Dead: 3 * time.Hour}}}
	if _, err := sandruntest.StoreWith(t, s.ClientURL(), jobs.LayoutConfig{Retention: want}); err != nil {
		t.Fatal(err)
	}
	nc, js := sandruntest.Connect(t, s.ClientURL())
	st, err := jobs.OpenLayout(sandruntest.Ctx(t), js, nc.ConnectedServerVersion())
	if err != nil {
		t.Fatal(err)
	}
	r := st.Retention
	if r.For("default", jobs.StateSucceeded) != 30*time.Minute || r.For("eval", jobs.StateDead) != 3*time.Hour ||
		r.For("default", jobs.StateDead) != 14*24*time.Hour {
		t.Fatalf("retention read back: %+v", r)
	}
	events, err := js.Stream(sandruntest.Ctx(t), jobs.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if got := events.CachedInfo().Config.MaxAge; got != 30*time.Minute {
		t.Errorf("EVENTS MaxAge %s, want the succeeded time (events never outlive the records)", got)
	}
}
