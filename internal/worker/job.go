package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/lease"
	"github.com/sandrun/sandrun/internal/secrets"
)

// job is one claimed attempt.
type job struct {
	w          *Worker
	spec       jobs.Spec
	run        jobs.Run
	rev        uint64 // the record's revision after our claim: our writes compare-and-set on it
	attempt    int
	lease      *lease.Lease
	keeper     *lease.Keeper
	log        *slog.Logger
	msgSubject string
	// releaseSlot gives the concurrency slot back (idempotent), and the
	// batch's run slot with it.
	releaseSlot func()
	// batchSlot is the throttled batch's run slot the job holds, if any:
	// losing it stops the run like losing the lease.
	batchSlot *batchSlot
	// wsSlot is the job's workspace's lease, if it has a workspace: lost,
	// the job stops as for a lost lease.
	wsSlot *batchSlot

	started time.Time
	ran     backends.Finisher // the backend that ran the attempt, if it wants to hear its end
	bspec   backends.Spec
	br      backends.Result
	stdout  *sink
	stderr  *sink
	policy  *jobs.PolicyRecord
}

// execute judges and runs the job, then commits its outcome. stopCtx
// stops the run (cancel requests, drain); ctx bounds the writes after it.
func (j *job) execute(ctx, stopCtx context.Context) {
	w := j.w
	// The keeper gives the lease up early enough that the job, killed
	// with its grace, is gone before the server can hand it to another.
	j.keeper = lease.Keep(j.lease, lease.KeeperConfig{OnRenew: w.m.LeaseRenewals.Inc,
		Margin: max(w.cfg.LeaseTTL/10, w.cfg.KillGrace+killSlack)})
	defer j.keeper.Stop()
	runCtx, cancel := context.WithCancelCause(stopCtx)
	defer cancel(nil)
	go func() {
		select {
		case <-j.keeper.Lost():
			cancel(errLeaseLost)
		case <-j.batchSlot.lost():
			cancel(errLeaseLost)
		case <-j.wsSlot.lost():
			cancel(errLeaseLost)
		case <-runCtx.Done():
		}
	}()

	be, ok := w.deps.Backends.Get(j.spec.Backend)
	if !ok {
		j.finish(ctx, j.result(jobs.StateFailed, fmt.Sprintf("backend: profile %q is not configured on worker %s (configured: %v)",
			j.spec.Backend, w.cfg.Name, w.deps.Backends.Profiles())))
		return
	}
	// What the job asks for and the profile cannot do is refused, never
	// silently dropped (a container image on the host, a session nothing
	// keeps).
	if what := be.Capabilities().Unsupported(backends.Spec{Session: j.spec.Session, Workspace: j.spec.Workspace, Container: j.spec.Container}); what != "" {
		j.failed(ctx, fmt.Sprintf("%s: profile %s (kind %s) does not support it: %s", what, j.spec.Backend, be.Kind(), unsupportedHint(what)), false)
		return
	}
	if j.spec.RemoveWorkspace {
		w.removeWorkspace(ctx, j, be)
		return
	}
	w.recordWorkspace(ctx, j)
	env, secretValues, err := w.openEnv(j.spec, j.run.OwnerString())
	if err != nil {
		j.failed(ctx, err.Error(), false)
		return
	}
	bspec := backends.Spec{
		JobID: j.spec.ID, Attempt: j.attempt, Worker: w.cfg.Name, Deployment: w.store.Deployment, Command: j.spec.Command,
		Dir: j.spec.Cwd, Env: attemptEnv(env, j.spec.ID, j.attempt), StartGate: j.startGate, KillGrace: w.cfg.KillGrace, Container: j.spec.Container, Session: sessionKey(j.run, j.spec.Session),
		Workspace: workspaceStorage(j.run, j.spec.Workspace),
	}
	isolated, refused, err := w.hostAccess(ctx, be, bspec)
	if err != nil {
		w.countBackendError(j.spec.Backend, err)
		j.failed(ctx, "backend: "+err.Error(), !errors.Is(err, backends.ErrPermanent))
		return
	}
	if refused != "" {
		r := j.result(jobs.StateDenied, refused)
		r.Rule = RuleHostAccess
		w.m.PolicyDecisions.WithLabelValues("deny", "", RuleHostAccess).Inc()
		w.m.HostAccessRefusals.WithLabelValues(j.spec.Backend).Inc()
		j.finish(ctx, r)
		return
	}
	dec := w.judge(j, isolated, be.Capabilities().Shell)
	if !dec.Allow {
		r := j.result(jobs.StateDenied, dec.Reason)
		r.Rule = dec.Rule
		j.finish(ctx, r)
		return
	}
	j.stdout = newSink(w, j, "stdout")
	j.stderr = newSink(w, j, "stderr")
	defer j.stdout.discard()
	defer j.stderr.discard()
	tctx, tcancel := context.WithTimeoutCause(runCtx, j.spec.Timeout.D(), errTimeout)
	j.started = w.now()
	if j.attempt == 1 && !j.spec.SubmittedAt.IsZero() {
		w.m.SubmitToStart.Observe(j.started.Sub(j.spec.SubmittedAt).Seconds())
	}
	w.m.JobsRunning.WithLabelValues(j.spec.Queue).Inc()
	// Secret values never reach the stored or streamed output, even when
	// the command prints them (echo $TOKEN, set -x).
	stdout, stderr := secrets.NewMasker(j.stdout, secretValues), secrets.NewMasker(j.stderr, secretValues)
	// The keeper notices a lapsed lease on its timer; a worker thawed
	// from a freeze runs on before that fires. Starting a process is what
	// cannot be taken back, so ask the clock first (TestChaos seed 142).
	// A cancel request that arrived since the claim (the watch delivers
	// one a moment after it is acknowledged) stops the job here too. The
	// backend asks the same gate again just before its start, where it
	// can (Spec.StartGate).
	switch _, gate := j.startGate(); {
	case gate != nil:
		err = gate
	case context.Cause(tctx) != nil:
		err = context.Cause(tctx)
	default:
		// A backend that ignores its context would keep the job running
		// forever: past its kill grace and a minute, it is given up on,
		// and what it writes later reaches no result.
		late := &lateGate{}
		out := backends.Output{Stdout: late.wrap(stdout), Stderr: late.wrap(stderr)}
		j.br, err = runWatched(tctx, w.cfg.KillGrace+abandonSlack, func(ctx context.Context) (backends.Result, error) {
			return be.Run(ctx, bspec, out)
		})
		late.close()
	}
	tcancel()
	_, _ = stdout.Flush(), stderr.Flush()
	if f, ok := be.(backends.Finisher); ok {
		j.ran, j.bspec = f, bspec
	}
	j.releaseSlot()
	w.m.JobsRunning.WithLabelValues(j.spec.Queue).Dec()
	j.stdout.flushLive()
	j.stderr.flushLive()
	w.m.RunDuration.WithLabelValues(j.spec.Queue, j.spec.Backend).Observe(w.now().Sub(j.started).Seconds())

	switch {
	case errors.Is(err, errAbandoned):
		w.m.BackendAbandoned.WithLabelValues(j.spec.Backend).Inc()
		j.log.Error("backend ignored its context: attempt abandoned, its workload may still run", "err", err)
		state := jobs.StateFailed
		switch {
		case errors.Is(err, errTimeout):
			state = jobs.StateTimedOut
		case errors.Is(err, errCanceled):
			state = jobs.StateCanceled
		case errors.Is(err, errLeaseLost):
			w.m.LeaseLosses.Inc()
			return // no longer ours: the reaper moves it on
		}
		j.finish(ctx, j.result(state, "backend: "+err.Error()))
	case err == nil && j.br.ExitCode == 0:
		j.finish(ctx, j.result(jobs.StateSucceeded, ""))
	case err == nil:
		msg := fmt.Sprintf("exit code %d", j.br.ExitCode)
		if j.br.Signal != "" {
			msg = "killed by " + j.br.Signal
		}
		j.failed(ctx, msg, j.spec.Retry.Retryable(j.br.ExitCode))
	case errors.Is(err, errTimeout):
		w.m.ScriptTimeouts.WithLabelValues(j.spec.Backend).Inc()
		j.finish(ctx, j.result(jobs.StateTimedOut, fmt.Sprintf("timed out after %s", j.spec.Timeout)))
	case errors.Is(err, errCanceled):
		j.finish(ctx, j.result(jobs.StateCanceled, "canceled while running"))
	case errors.Is(err, errLeaseLost):
		// Self-fenced: the workload is dead and the job is no longer
		// ours. The reaper gives it to the next attempt.
		w.m.LeaseLosses.Inc()
		j.log.Warn("lease lost: job stopped or not started", "err", err, "keeper", j.keeper.Err())
	case errors.Is(err, errDrained):
		j.handBack(ctx)
	default:
		w.countBackendError(j.spec.Backend, err)
		j.failed(ctx, "backend: "+err.Error(), !errors.Is(err, backends.ErrPermanent))
	}
}

// startGate is asked by a backend right before the workload starts: the
// lease must still be valid by the clock, and no cancel request in. until
// is the end of the lease's vouched-for window, which a backend checks
// again in the started process.
func (j *job) startGate() (until time.Time, err error) {
	until, err = j.keeper.Until()
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %w", errLeaseLost, err)
	}
	if j.w.cancelRequested(j.run.OwnerString(), j.spec.ID) {
		return time.Time{}, errCanceled
	}
	return until, nil
}

// abandonSlack is how long past its kill grace a backend may take to
// return from a stopped run before the worker gives up on it.
const abandonSlack = time.Minute

// lateGate drops what a backend writes after the worker has stopped
// listening (a run it abandoned): the attempt's output is settled then.
type lateGate struct {
	mu     sync.Mutex
	closed bool
}

func (g *lateGate) wrap(w io.Writer) io.Writer { return gatedWriter{g: g, w: w} }

func (g *lateGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
}

type gatedWriter struct {
	g *lateGate
	w io.Writer
}

func (gw gatedWriter) Write(p []byte) (int, error) {
	gw.g.mu.Lock()
	defer gw.g.mu.Unlock()
	if gw.g.closed {
		return len(p), nil
	}
	return gw.w.Write(p)
}

// Variables the worker sets in every attempt's environment, over the
// spec's own: a command may key its side effects on them.
const (
	EnvJobID   = "SANDRUN_JOB_ID"
	EnvAttempt = "SANDRUN_ATTEMPT"
)

// attemptEnv is env with the attempt's identity added.
func attemptEnv(env map[string]string, id string, attempt int) map[string]string {
	out := make(map[string]string, len(env)+2)
	maps.Copy(out, env)
	out[EnvJobID] = id
	out[EnvAttempt] = strconv.Itoa(attempt)
	return out
}

// countBackendError counts a backend's failure to run an attempt by kind.
func (w *Worker) countBackendError(backend string, err error) {
	kind := "other"
	switch {
	case errors.Is(err, backends.ErrPermanent):
		kind = "permanent"
	case errors.Is(err, backends.ErrUnavailable):
		kind = "unavailable"
	}
	w.m.BackendErrors.WithLabelValues(backend, kind).Inc()
}

// failed ends a failed attempt: a retry after backoff while attempts
// remain, else dead (retries spent) or failed (not retryable).
func (j *job) failed(ctx context.Context, msg string, retryable bool) {
	switch {
	case retryable && j.attempt < j.spec.MaxAttempts:
		j.retry(ctx, msg)
	case retryable && j.spec.MaxAttempts > 1:
		j.finish(ctx, j.result(jobs.StateDead, fmt.Sprintf("attempt %d of %d: %s", j.attempt, j.spec.MaxAttempts, msg)))
	default:
		j.finish(ctx, j.result(jobs.StateFailed, msg))
	}
}

// result builds the committed result of this attempt.
func (j *job) result(state jobs.State, errMsg string) jobs.Result {
	w := j.w
	r := jobs.Result{
		JobID: j.spec.ID, Queue: j.spec.Queue, Backend: j.spec.Backend,
		State: state, Attempt: j.attempt, Error: errMsg, Worker: w.cfg.Name,
		ExitCode: j.br.ExitCode, Signal: j.br.Signal,
		StartedAt: j.br.StartedAt, FinishedAt: w.now().UTC(),
		WallSeconds:    j.br.Wall().Seconds(),
		UserCPUSeconds: j.br.UserCPU.Seconds(), SysCPUSeconds: j.br.SysCPU.Seconds(),
		MaxRSSBytes: j.br.MaxRSSBytes,
		Policy:      j.policy,
	}
	if j.started.IsZero() {
		r.ExitCode = -1
	}
	return r
}

// finish uploads the output and commits a terminal result: one write of
// the record, over the revision of our claim, so only the current
// holder's result is ever recorded.
func (j *job) finish(ctx context.Context, r jobs.Result) {
	ctx, cancel := afterRun(ctx)
	defer cancel()
	w := j.w
	if j.stdout != nil {
		ttl := w.store.Retention.For(j.spec.Queue, r.State)
		r.Stdout = j.stdout.upload(ctx, ttl)
		r.Stderr = j.stderr.upload(ctx, ttl)
	}
	err := j.retryWrite(ctx, "commit result", func() error {
		return w.end(ctx, j.run, j.rev, r)
	})
	unmarked := errors.Is(err, errUnmarked)
	if unmarked {
		j.log.Error("batch end marker not written: the lease is left to expire, and the reaper writes it", "err", err)
		err = nil
	}
	if err != nil {
		if errors.Is(err, jobs.ErrFenced) {
			w.m.StaleCommits.Inc()
			j.log.Warn("stale commit rejected: another holder owns this job now", "state", r.State)
		} else {
			j.log.Error("commit failed; the reaper will recover the job", "err", err)
		}
		return
	}
	w.m.JobsFinished.WithLabelValues(j.spec.Queue, j.spec.Backend, string(r.State)).Inc()
	j.log.Info("job finished", "state", r.State, "exit_code", r.ExitCode, "wall_seconds", r.WallSeconds, "error", r.Error)
	j.stopKeeper()
	if !unmarked {
		j.lease.ReleaseAsync()
	}
	if r.State.Terminal() {
		w.leaveWorkspace(ctx, j.spec, j.run.OwnerString())
	}
	j.finished(ctx, r.State == jobs.StateSucceeded)
}

// end commits r as the terminal write of run over rev (ErrFenced when the
// record moved since), copying a dead job to the DLQ first, and announces
// the end. Every path that ends a job goes through it.
func (w *Worker) end(ctx context.Context, run jobs.Run, rev uint64, r jobs.Result) error {
	if r.State == jobs.StateDead {
		// Before the commit: a worker that dies between the two leaves
		// an entry whose record is not dead yet (`dlq retry` checks the
		// record), rather than a dead job missing from the DLQ.
		spec := run.Spec
		if err := w.store.PublishDLQ(ctx, jobs.DLQEntry{
			JobID: r.JobID, Queue: r.Queue, Reason: r.Error, Attempts: r.Attempt,
			Time: r.FinishedAt, Spec: &spec,
		}); err != nil {
			return fmt.Errorf("dlq: %w", err)
		}
	}
	ended, _, err := w.store.End(ctx, run, r, rev)
	if err != nil {
		return err
	}
	code := r.ExitCode
	w.store.PublishEvent(jobs.Event{Kind: jobs.EventFinished, JobID: r.JobID, Attempt: r.Attempt, State: r.State,
		Worker: r.Worker, Time: r.FinishedAt, Message: r.Error, ExitCode: &code})
	if h := w.deps.MarkFault; h != nil {
		if err := h(r.JobID); err != nil {
			return fmt.Errorf("%w: %w", errUnmarked, err)
		}
	}
	if _, err := w.store.MarkBatchEnd(ctx, ended); err != nil {
		return fmt.Errorf("%w: %w", errUnmarked, err)
	}
	return nil
}

// errUnmarked is end's error when the job's end is committed but its batch
// end marker could not be written. The caller must then leave its lease
// to expire instead of releasing it: the reaper that sees the expiry of
// an ended item's lease writes the marker (see repairBatchEnd).
var errUnmarked = errors.New("committed, but the batch end marker is not written")

// writeAfterRun bounds the writes that record an attempt's outcome.
const writeAfterRun = 30 * time.Second

// afterRun is the context of the writes that record an outcome already
// reached: a drain that times out meanwhile cancels the job's context, and
// must not throw a finished command's result away (it would end dead, or
// run again). The drain waits for these writes.
func afterRun(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), writeAfterRun)
}

// finished tells the backend that ran the attempt that its outcome is
// recorded, so that it may clean up.
func (j *job) finished(ctx context.Context, succeeded bool) {
	if j.ran == nil {
		return
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := j.ran.Finished(fctx, j.bspec, succeeded); err != nil {
		j.log.Warn("backend clean-up after the outcome", "backend", j.spec.Backend, "err", err)
	}
}

// retry records the failed attempt and schedules the next one after its
// backoff with a server-side delayed publish.
func (j *job) retry(ctx context.Context, msg string) {
	ctx, cancel := afterRun(ctx)
	defer cancel()
	w := j.w
	delay := j.spec.Retry.Delay(j.attempt+1, rand.Float64())
	run := j.run
	run.State = jobs.StateRetryWait
	run.LastError = fmt.Sprintf("attempt %d: %s", j.attempt, msg)
	run.NextAttemptAt = w.now().Add(delay).UTC()
	run.UpdatedAt = w.now().UTC()
	err := j.retryWrite(ctx, "record retry", func() error {
		_, err := w.store.Move(ctx, run, j.rev)
		return err
	})
	if err != nil {
		if errors.Is(err, jobs.ErrFenced) {
			w.m.StaleCommits.Inc()
		}
		j.log.Warn("record retry failed", "err", err)
		return
	}
	j.finished(ctx, false)
	if err := j.retryWrite(ctx, "schedule retry", func() error {
		return w.store.ScheduleJob(ctx, j.spec, j.run.OwnerString(), run.NextAttemptAt, retryMsgID(j.spec.ID, j.attempt))
	}); err != nil {
		// The lease will expire; the reaper sees retry_wait and schedules.
		j.log.Error("schedule retry failed; the reaper will reschedule", "err", err)
		return
	}
	w.m.JobsFinished.WithLabelValues(j.spec.Queue, j.spec.Backend, string(jobs.StateRetryWait)).Inc()
	j.log.Info("job attempt failed; retry scheduled", "error", msg, "retry_in", delay.Round(time.Millisecond).String())
	w.m.Retries.WithLabelValues(j.spec.Queue).Inc()
	w.store.PublishEvent(jobs.Event{Kind: "retry", JobID: j.spec.ID, Attempt: j.attempt, State: jobs.StateRetryWait,
		Worker: w.cfg.Name, Time: w.now().UTC(), Message: fmt.Sprintf("%s; next attempt in %s", run.LastError, delay.Round(time.Millisecond))})
	j.stopKeeper()
	j.lease.ReleaseAsync()
}

// handBack returns a job stopped by shutdown to the queue for another
// worker. The attempt is given back: the job did not fail.
func (j *job) handBack(ctx context.Context) {
	w := j.w
	run := j.run
	run.State = jobs.StateQueued
	run.Attempt--
	run.Worker = ""
	run.UpdatedAt = w.now().UTC()
	run.LastError = fmt.Sprintf("attempt %d: stopped by the shutdown of worker %s", j.attempt, w.cfg.Name)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	// Publish first: a message whose record still says running waits for
	// the lease we hold, then runs; a queued record without a message
	// would wait for the reaper.
	if err := w.store.PublishJob(wctx, j.spec, j.run.OwnerString(), fmt.Sprintf("%s.a%d.drain", j.spec.ID, j.attempt)); err != nil {
		j.log.Warn("hand back: publish (the reaper will requeue the job when the lease expires)", "err", err)
		return
	}
	if _, err := w.store.Move(wctx, run, j.rev); err != nil {
		j.log.Warn("hand back: record (the attempt stays counted)", "err", err)
	}
	j.stopKeeper()
	j.releaseQuiet(wctx)
	j.log.Info("job handed back to the queue")
}

func (j *job) stopKeeper() {
	if j.keeper != nil {
		j.keeper.Stop()
	}
}

func (j *job) releaseQuiet(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := j.lease.Release(rctx); err != nil {
		j.log.Debug("release lease", "err", err)
	}
}

// retryWrite retries a write through transient server trouble (a restart,
// a leader election) for as long as the lease may still be ours.
func (j *job) retryWrite(ctx context.Context, what string, write func() error) error {
	wait := 50 * time.Millisecond
	for {
		err := write()
		if err == nil || errors.Is(err, jobs.ErrFenced) || errors.Is(err, errUnmarked) {
			return err
		}
		if j.keeper != nil {
			select {
			case <-j.keeper.Lost():
				return fmt.Errorf("%s: %w (%w)", what, err, j.keeper.Err())
			default:
			}
		}
		j.log.Warn("write failed, retrying", "what", what, "err", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, err)
		}
		wait = min(2*wait, 2*time.Second)
	}
}

func retryMsgID(id string, attempt int) string { return fmt.Sprintf("%s.a%d.retry", id, attempt) }

// sessionKey scopes a job's session key to its owner: two submitters who
// pick the same key never share a session (a container, a sandbox).
func sessionKey(run jobs.Run, key string) string {
	if key == "" {
		return ""
	}
	return run.OwnerString() + "." + key
}

// workspaceStorage is the name the backend keeps the job's workspace
// under: the owner's, so that two submitters' workspaces of one name
// never meet.
func workspaceStorage(run jobs.Run, ws string) string {
	if ws == "" {
		return ""
	}
	return jobs.WorkspaceStorage(run.OwnerString(), ws)
}

// unsupportedHint says where what a job asked for is supported.
func unsupportedHint(what string) string {
	switch what {
	case "session":
		return "persistent sessions are kept by docker and modal profiles"
	case "workspace":
		return "workspaces are kept by local, docker, ssh, modal and daytona profiles"
	case "container.image":
		return "a job's image is run by docker, singularity and daytona profiles"
	}
	return "container options are honoured by docker profiles (singularity: image, mounts, network)"
}
