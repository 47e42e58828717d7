package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/sandrun/sandrun/internal/app"
	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/jobs"
)

// check is one line of doctor's report (and one element of its --json
// output: {"check", "ok", "detail", "error", "items"}).
type check struct {
	Check  string   `json:"check"`
	OK     bool     `json:"ok"`
	Detail string   `json:"detail,omitempty"`
	Error  string   `json:"error,omitempty"`
	Items  []string `json:"items,omitempty"`
}

// doctor checks a worker's configuration: NATS and the layout, the
// policy, and every backend profile — each constructed, validated and
// described on its own, so that one broken profile does not hide the
// others — with the orphans the reaper would remove. It reports every
// failure and exits non-zero at the end if there was one.
func (c cli) doctorCmd() *cobra.Command {
	var (
		configFile string
		out        outputFlag
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "check NATS, the policy and every backend profile of a worker config",
		Example: `  sandrun doctor          # the built-in local profile, on the server of the current context
  sandrun doctor -o json`,
		Args: argsUsage(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.doctor(cmd.Context(), configFile, out)
		},
	}
	cmd.Flags().StringVar(&configFile, "config", os.Getenv("SANDRUN_CONFIG"), "worker config file to check (env SANDRUN_CONFIG; default: the built-in local profile only)")
	out.register(cmd)
	cmd.Flags().Lookup("output").Usage = "table or json (the checks as an array; yaml too)"
	return cmd
}

func (c cli) doctor(ctx context.Context, configFile string, out outputFlag) error {
	kind, err := out.kind()
	if err != nil {
		return err
	}
	cfg, broken, err := app.LoadFileProfiles(configFile)
	if err != nil {
		return err
	}
	for _, d := range cfg.Deprecations {
		fmt.Fprintf(c.stderr, "sandrun doctor: warning: %s\n", d)
	}
	// The config's server is the one to check, unless the command line
	// names another.
	n := cfg.NATS
	if c.conn.n.URL != "" || c.conn.context != "" || n.URL == "" {
		if n, _, err = c.conn.resolve(); err != nil {
			return err
		}
	}
	var checks []check
	report := func(c check, err error) {
		if err != nil {
			c.OK, c.Error = false, err.Error()
		} else {
			c.OK = true
		}
		checks = append(checks, c)
	}
	if configFile == "" {
		report(check{Check: "config", Detail: "no --config (or SANDRUN_CONFIG): the built-in local profile only"}, nil)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var store *jobs.Store
	cl, closeFn, err := connect(cctx, n)
	if err == nil {
		defer closeFn()
		store = cl.Store()
		report(check{Check: "nats", Detail: "layout present, deployment " + store.Deployment}, nil)
	} else {
		report(check{Check: "nats"}, err)
	}
	if _, err := cfg.Policy.Engine(); err != nil {
		report(check{Check: "policy"}, err)
	} else {
		report(check{Check: "policy", Detail: "ceiling and allowlist valid"}, nil)
	}
	profiles := cfg.Backends
	if len(profiles) == 0 && len(broken) == 0 {
		profiles = map[string]app.BackendConfig{"local": {Kind: "local"}}
	}
	names := slices.Sorted(maps.Keys(profiles))
	for name := range broken {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := broken[name]; err != nil {
			report(check{Check: "backend " + name}, err)
			continue
		}
		checks = append(checks, doctorProfile(cctx, name, profiles[name], store)...)
	}
	failed := 0
	for _, ch := range checks {
		if !ch.OK {
			failed++
		}
	}
	if kind != "table" {
		if err := c.emit(out, checks, nil); err != nil {
			return err
		}
	} else {
		printChecks(c.stdout, checks)
	}
	if failed > 0 {
		return fmt.Errorf("%d problem(s) found", failed)
	}
	return nil
}

// doctorProfile constructs, validates and describes one profile, and
// lists the orphans the reaper would remove if the backend can.
func doctorProfile(ctx context.Context, name string, bc app.BackendConfig, store *jobs.Store) []check {
	what := "backend " + name
	if err := bc.ForwardEnv.Validate("backends." + name + ".forward_env"); err != nil {
		return []check{{Check: what, Error: err.Error()}}
	}
	be, err := app.NewBackend(name, bc, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		return []check{{Check: what, Error: err.Error()}}
	}
	if cl, ok := be.(io.Closer); ok {
		defer func() { _ = cl.Close() }()
	}
	if err := be.Validate(ctx); err != nil {
		return []check{{Check: what, Error: err.Error()}}
	}
	out := []check{{Check: what, OK: true, Detail: be.Kind()}}
	if d, ok := be.(backends.Describer); ok {
		desc, err := d.Describe(ctx)
		if err != nil {
			return []check{{Check: what, Error: err.Error()}}
		}
		out[0].Detail = be.Kind() + ": " + desc
	}
	o, ok := be.(orphanLister)
	if !ok || store == nil {
		return out
	}
	orphans, err := o.Orphans(ctx, store.Deployment, func(id string, attempt int, worker string) bool {
		return attemptLive(ctx, store, id, attempt, worker)
	})
	if err != nil {
		return append(out, check{Check: "orphans " + name, Error: err.Error()})
	}
	return append(out, check{Check: "orphans " + name, OK: true,
		Detail: fmt.Sprintf("%d workload(s) the reaper would remove", len(orphans)), Items: orphans})
}

// printChecks writes the report as text: ok or FAIL, the check, and what
// it found; items indented below.
func printChecks(w io.Writer, checks []check) {
	for _, ch := range checks {
		if ch.OK {
			fmt.Fprintf(w, "ok    %-22s %s\n", ch.Check, ch.Detail)
		} else {
			fmt.Fprintf(w, "FAIL  %-22s %s\n", ch.Check, ch.Error)
		}
		for _, it := range ch.Items {
			fmt.Fprintf(w, "      %s\n", it)
		}
	}
}

// orphanLister is implemented by backends whose workloads can outlive a
// worker: doctor lists what the reaper would remove.
type orphanLister interface {
	Orphans(ctx context.Context, deployment string, live func(jobID string, attempt int, worker string) bool) ([]string, error)
}

// attemptLive is the reaper's test seen from outside any worker: the
// attempt is the job's current one, running, under a lease.
func attemptLive(ctx context.Context, st *jobs.Store, id string, attempt int, worker string) bool {
	run, _, err := st.GetRun(ctx, id)
	if err != nil {
		return !errors.Is(err, jobs.ErrNotFound)
	}
	if run.State != jobs.StateRunning || run.Attempt != attempt || run.Worker != worker {
		return false
	}
	_, err = st.State.Get(ctx, jobs.LeaseKey(id))
	return !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyDeleted)
}
