package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
)

// Keys in the schedules bucket: the definition, and the firing state that
// the leading scheduler keeps (kept apart so that editing a schedule never
// races with firing it).
func defKey(name string) string   { return "def." + name }
func stateKey(name string) string { return "state." + name }

// ErrNoSchedule is returned for a schedule name that does not exist.
var ErrNoSchedule = errors.New("no such schedule")

// State is what the scheduler remembers of a schedule.
type State struct {
	// LastSlot is the last slot handled (fired, skipped or missed): the
	// next leader resumes after it. The leader stores it after the burst
	// the slot was part of, so it may lag behind the jobs published.
	LastSlot time.Time `json:"last_slot,omitzero"`
	// LastJob is the job of the last fired slot (for overlap policies).
	LastJob string `json:"last_job,omitempty"`
	// Missed counts slots older than the catch-up window at takeover,
	// and slots given up after their dispatch kept failing.
	Missed int64 `json:"missed,omitempty"`
	// History holds the most recent fires and skips, newest last.
	History []Fire `json:"history,omitempty"`
}

// Fire is one handled slot.
type Fire struct {
	Slot   time.Time `json:"slot"`
	At     time.Time `json:"at"`
	JobID  string    `json:"job_id,omitempty"`
	Kind   string    `json:"kind"`             // slot, catchup, trigger, skipped, missed
	Reason string    `json:"reason,omitempty"` // for skipped and missed
}

const historyLen = 20

func (st *State) record(f Fire) {
	st.History = append(st.History, f)
	if n := len(st.History); n > historyLen {
		st.History = slices.Delete(st.History, 0, n-historyLen)
	}
}

// Catalog reads and edits schedules in the schedules bucket. The CLI and
// the schedulers share it; schedulers watch the bucket for changes.
type Catalog struct {
	kv     jetstream.KeyValue
	client *client.Client
	now    func() time.Time
}

// NewCatalog returns a catalog over store's schedules bucket.
func NewCatalog(store *jobs.Store) *Catalog {
	return &Catalog{kv: store.Schedules, client: client.New(store).As(DefaultOwner), now: time.Now}
}

// Put validates s and stores it, keeping the stored suspended flag when
// keepSuspended is set (file seeding must not resume what an operator
// suspended).
func (c *Catalog) Put(ctx context.Context, s Schedule, keepSuspended bool) error {
	if _, err := compile(s); err != nil {
		return err
	}
	if keepSuspended {
		if old, err := c.Get(ctx, s.Name); err == nil {
			s.Suspended = old.Suspended
		}
	}
	// Secret values are kept sealed to the workers, like a job's, and
	// open for cron jobs only (any scheduler identity may fire them).
	job, err := c.client.SealFor(ctx, s.Job, string(jobs.OriginCron)+".*")
	if err != nil {
		return fmt.Errorf("schedules.%s.job: %w", s.Name, err)
	}
	s.Job = job
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = c.kv.Put(ctx, defKey(s.Name), data)
	return err
}

// Get returns the schedule called name.
func (c *Catalog) Get(ctx context.Context, name string) (Schedule, error) {
	s, _, err := c.get(ctx, name)
	return s, err
}

func (c *Catalog) get(ctx context.Context, name string) (Schedule, uint64, error) {
	e, err := c.kv.Get(ctx, defKey(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return Schedule{}, 0, fmt.Errorf("%s: %w", name, ErrNoSchedule)
	}
	if err != nil {
		return Schedule{}, 0, err
	}
	s, err := decodeSchedule(name, e.Value())
	if err != nil {
		return Schedule{}, 0, err
	}
	return s, e.Revision(), nil
}

// decodeSchedule decodes the stored definition of schedule name.
func decodeSchedule(name string, data []byte) (Schedule, error) {
	var s Schedule
	if err := json.Unmarshal(data, &s); err != nil {
		return Schedule{}, fmt.Errorf("schedule %s: %w", name, err)
	}
	return s, nil
}

// List returns every schedule, by name.
func (c *Catalog) List(ctx context.Context) ([]Schedule, error) {
	lister, err := c.kv.ListKeysFiltered(ctx, defKey("*"))
	if err != nil {
		return nil, err
	}
	var names []string
	for k := range lister.Keys() {
		names = append(names, strings.TrimPrefix(k, defKey("")))
	}
	slices.Sort(names)
	out := make([]Schedule, 0, len(names))
	for _, n := range names {
		s, err := c.Get(ctx, n)
		if errors.Is(err, ErrNoSchedule) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Remove deletes a schedule and its state.
func (c *Catalog) Remove(ctx context.Context, name string) error {
	if _, err := c.Get(ctx, name); err != nil {
		return err
	}
	if err := c.kv.Purge(ctx, defKey(name)); err != nil {
		return err
	}
	return c.kv.Purge(ctx, stateKey(name))
}

// SetSuspended suspends or resumes a schedule.
func (c *Catalog) SetSuspended(ctx context.Context, name string, suspended bool) error {
	for {
		s, rev, err := c.get(ctx, name)
		if err != nil {
			return err
		}
		if s.Suspended == suspended {
			return nil
		}
		s.Suspended = suspended
		data, err := json.Marshal(s)
		if err != nil {
			return err
		}
		if _, err := c.kv.Update(ctx, defKey(name), data, rev); err == nil || !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return err
		}
	}
}

// State returns the schedule's firing state (zero if it never fired).
func (c *Catalog) State(ctx context.Context, name string) (State, error) {
	st, _, err := c.state(ctx, name)
	return st, err
}

func (c *Catalog) state(ctx context.Context, name string) (State, uint64, error) {
	e, err := c.kv.Get(ctx, stateKey(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return State{}, 0, nil
	}
	if err != nil {
		return State{}, 0, err
	}
	var st State
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return State{}, 0, fmt.Errorf("schedule state %s: %w", name, err)
	}
	return st, e.Revision(), nil
}

// updateState applies change to the stored state by CAS, retrying on
// conflict (a trigger from the CLI while the leader fires).
func (c *Catalog) updateState(ctx context.Context, name string, change func(*State)) error {
	for {
		st, rev, err := c.state(ctx, name)
		if err != nil {
			return err
		}
		change(&st)
		data, err := json.Marshal(st)
		if err != nil {
			return err
		}
		if rev == 0 {
			_, err = c.kv.Create(ctx, stateKey(name), data)
		} else {
			_, err = c.kv.Update(ctx, stateKey(name), data, rev)
		}
		if err == nil || (!errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists)) {
			return err
		}
	}
}

// Trigger submits an extra run of the schedule now, outside its slots.
func (c *Catalog) Trigger(ctx context.Context, name string) (string, error) {
	s, err := c.Get(ctx, name)
	if err != nil {
		return "", err
	}
	now := c.now().UTC()
	spec := jobTemplate(s, now)
	spec.ID = fmt.Sprintf("cron-%s-trigger-%s", s.Name, jobs.NewID(now))
	spec.Labels["trigger"] = "manual"
	if _, err := c.client.Submit(ctx, spec); err != nil {
		return "", err
	}
	err = c.updateState(ctx, name, func(st *State) {
		st.record(Fire{Slot: now, At: now, JobID: spec.ID, Kind: "trigger"})
	})
	return spec.ID, err
}

// SetLastSlot overwrites the last handled slot of a schedule: an
// operator's tool (and the tests') for replaying or skipping ahead.
func SetLastSlot(ctx context.Context, c *Catalog, name string, slot time.Time) error {
	return c.updateState(ctx, name, func(st *State) { st.LastSlot = slot })
}
