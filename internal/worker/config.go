// Package worker claims jobs from JetStream under fenced leases, judges
// them with the approval policy, runs them on their backend and commits
// their results. It also hosts the reaper, which a leader-elected worker
// runs to recover jobs whose worker died.
package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/metrics"
	"github.com/sandrun/sandrun/internal/policy"
	"github.com/sandrun/sandrun/internal/secrets"
)

// Config tunes a worker. Zero fields get defaults from WithDefaults.
type Config struct {
	// Name identifies this worker in leases, results and the workers
	// bucket. Default: hostname-pid.
	Name string `yaml:"name"`
	// Queues served. Default: ["default"].
	Queues []string `yaml:"queues"`
	// Slots is how many jobs run at once. Default 4.
	Slots int `yaml:"slots"`
	// LeaseTTL: a job whose worker stops renewing is recovered this long
	// after the last renewal. Renewals happen every LeaseTTL/3. Default 30s.
	LeaseTTL time.Duration `yaml:"lease_ttl"`
	// ClaimWindow is how long a fetched message may wait to be claimed
	// before JetStream redelivers it (the consumer's AckWait). Default 60s.
	ClaimWindow time.Duration `yaml:"claim_window"`
	// PullWait is how long one pull request waits for a message. Default 5s.
	PullWait time.Duration `yaml:"pull_wait"`
	// DrainTimeout: on shutdown, running jobs get this long to finish
	// before they are stopped and handed back to the queue. Default 30s.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// KillGrace is the time between the graceful stop and the forced kill
	// of a job's workload. Default 5s.
	KillGrace time.Duration `yaml:"kill_grace"`
	// Reaper makes this worker a candidate for the reaper role. Default true
	// (set NoReaper to opt out).
	NoReaper bool `yaml:"no_reaper"`
	// ReaperScan is the period of the reaper's full rescan. Default 30s.
	ReaperScan time.Duration `yaml:"reaper_scan"`
	// WorkspaceIdle removes a workspace no job has used this long (the
	// reaper submits its removal job, ordered after any queued job of
	// it). Default 0: workspaces are kept until `sandrun workspace rm`.
	WorkspaceIdle time.Duration `yaml:"workspace_idle"`
	// ElectionTTL is the reaper leadership lease. Default 15s.
	ElectionTTL time.Duration `yaml:"election_ttl"`
	// OutputHead and OutputTail bound the output kept in a result (the
	// full output goes to the OUTPUTS stream). Default 8 KiB each.
	OutputHead int `yaml:"output_head"`
	OutputTail int `yaml:"output_tail"`
	// LiveOutputMax bounds the live output events of one attempt's
	// stream. Default 4 MiB.
	LiveOutputMax int64 `yaml:"live_output_max"`
	// OutputMax bounds the output of one attempt's stream kept on the
	// worker's disk and in the OUTPUTS stream; past it the output is
	// counted and hashed but not kept, and the result says so (capped).
	// Default 64 MiB.
	OutputMax int64 `yaml:"output_max"`
	// SpoolDir holds output while a job runs. Default: the OS temp dir.
	SpoolDir string `yaml:"spool_dir"`
	// SecretsKeyFile is the workers' secrets key (DATA/auth/secrets.nk of
	// the deployment; the same on every worker): it opens the secret_env
	// values submitters sealed. Without it, jobs with secrets fail.
	SecretsKeyFile string `yaml:"secrets_key_file"`
}

var queueRE = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// The defaults of a worker's configuration, used by WithDefaults, the
// daemons' flags and the docs (TestDaemonFlagDefaultsAreTheConfigs).
const (
	DefaultSlots         = 4
	DefaultLeaseTTL      = 30 * time.Second
	DefaultClaimWindow   = time.Minute
	DefaultPullWait      = 5 * time.Second
	DefaultDrainTimeout  = 30 * time.Second
	DefaultKillGrace     = 5 * time.Second
	DefaultReaperScan    = 30 * time.Second
	DefaultElectionTTL   = 15 * time.Second
	DefaultOutputHead    = 8 << 10
	DefaultOutputTail    = 8 << 10
	DefaultLiveOutputMax = 4 << 20
	DefaultOutputMax     = 64 << 20
)

// WithDefaults returns a copy of c with zero fields filled.
func (c Config) WithDefaults() Config {
	if c.Name == "" {
		h, _ := os.Hostname()
		c.Name = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	if len(c.Queues) == 0 {
		c.Queues = []string{jobs.DefaultQueue}
	}
	c.Queues = append([]string(nil), c.Queues...)
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Slots == 0 {
		c.Slots = DefaultSlots
	}
	def(&c.LeaseTTL, DefaultLeaseTTL)
	def(&c.ClaimWindow, DefaultClaimWindow)
	def(&c.PullWait, DefaultPullWait)
	def(&c.DrainTimeout, DefaultDrainTimeout)
	def(&c.KillGrace, DefaultKillGrace)
	def(&c.ReaperScan, DefaultReaperScan)
	def(&c.ElectionTTL, DefaultElectionTTL)
	if c.OutputHead == 0 {
		c.OutputHead = DefaultOutputHead
	}
	if c.OutputTail == 0 {
		c.OutputTail = DefaultOutputTail
	}
	if c.LiveOutputMax == 0 {
		c.LiveOutputMax = DefaultLiveOutputMax
	}
	if c.OutputMax == 0 {
		c.OutputMax = DefaultOutputMax
	}
	if c.SpoolDir == "" {
		c.SpoolDir = os.TempDir()
	}
	return c
}

// killSlack is what stopping a job takes besides its kill grace.
const killSlack = 500 * time.Millisecond

// Validate checks a config that has been through WithDefaults; errors
// name the field.
func (c Config) Validate() error {
	var errs []error
	for i, q := range c.Queues {
		if !queueRE.MatchString(q) {
			errs = append(errs, fmt.Errorf("worker.queues[%d]: %q is not a queue name (1-64 of a-z 0-9 _ -)", i, q))
		}
	}
	if c.Slots < 1 || c.Slots > 10_000 {
		errs = append(errs, fmt.Errorf("worker.slots: must be 1..10000, got %d", c.Slots))
	}
	if c.LeaseTTL < 3*time.Second {
		errs = append(errs, fmt.Errorf("worker.lease_ttl: must be >= 3s, got %s", c.LeaseTTL))
	}
	if c.LeaseTTL >= 3*time.Second && c.KillGrace+killSlack > c.LeaseTTL/2 {
		errs = append(errs, fmt.Errorf("worker.kill_grace: %s (+%s to stop) must fit in half the lease_ttl (%s): a job is stopped before its lease can expire", c.KillGrace, killSlack, c.LeaseTTL))
	}
	if c.ReaperScan < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("worker.reaper_scan: must be >= 100ms, got %s", c.ReaperScan))
	}
	if c.DrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("worker.drain_timeout: must not be negative, got %s", c.DrainTimeout))
	}
	if c.KillGrace < 0 {
		errs = append(errs, fmt.Errorf("worker.kill_grace: must not be negative, got %s", c.KillGrace))
	}
	if c.WorkspaceIdle < 0 {
		errs = append(errs, fmt.Errorf("worker.workspace_idle: must not be negative, got %s", c.WorkspaceIdle))
	}
	if c.ElectionTTL < 2*time.Second {
		errs = append(errs, fmt.Errorf("worker.election_ttl: must be >= 2s, got %s", c.ElectionTTL))
	}
	if c.ClaimWindow < time.Second {
		errs = append(errs, fmt.Errorf("worker.claim_window: must be >= 1s, got %s", c.ClaimWindow))
	}
	if c.PullWait < 100*time.Millisecond || c.PullWait >= c.ClaimWindow {
		errs = append(errs, fmt.Errorf("worker.pull_wait: must be >= 100ms and below claim_window, got %s", c.PullWait))
	}
	if c.OutputMax < 0 {
		errs = append(errs, fmt.Errorf("worker.output_max: must be >= 0 (0: 64 MiB), got %d", c.OutputMax))
	}
	if c.OutputHead < 0 || c.OutputTail < 0 {
		errs = append(errs, errors.New("worker.output_head/output_tail: must be >= 0"))
	}
	if st, err := os.Stat(c.SpoolDir); err != nil || !st.IsDir() {
		errs = append(errs, fmt.Errorf("worker.spool_dir: %q is not a directory", c.SpoolDir))
	}
	return errors.Join(errs...)
}

// Deps are the worker's collaborators, built by the caller.
type Deps struct {
	Store    *jobs.Store
	Backends *backends.Registry
	Policy   *policy.Engine
	Metrics  *metrics.Metrics
	Logger   *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Secrets opens the secret_env values submitters sealed to the
	// workers' key; nil: this worker runs no job with secrets.
	Secrets *secrets.Key
	// Forward is, per backend profile, what it forwards from the worker
	// into its sandboxes (forward_env); nil: nothing.
	Forward map[string]Forward

	// Test hooks: nil in production, where they cost one nil check.

	// Handled is called when the worker is done with a dispatch message:
	// all it does for it (claim, run, commit, the lease's release, ack,
	// log lines) has been done. id is the job's ID as far as the message
	// could be read (empty for one that is not a valid job).
	Handled func(id string)
	// ReaperPass is called after each periodic pass of the reaper.
	ReaperPass func()
	// MarkFault, when it returns an error for a job, stands for a
	// worker that dies (or cannot write) between the commit that ends a
	// batch item and its end marker.
	MarkFault func(id string) error
}

func (d Deps) validate() error {
	switch {
	case d.Store == nil:
		return errors.New("worker: Store is required")
	case d.Backends == nil || len(d.Backends.Profiles()) == 0:
		return errors.New("worker: at least one backend profile is required")
	case d.Policy == nil:
		return errors.New("worker: Policy is required")
	case d.Metrics == nil:
		return errors.New("worker: Metrics is required")
	case d.Logger == nil:
		return errors.New("worker: Logger is required")
	}
	return nil
}
