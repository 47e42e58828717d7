package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/sys/unix"

	"github.com/sandrun/sandrun/internal/backends"
)

// minPoll is the wait between reads of the output files while output
// flows; with none, the wait grows by half up to PollInterval.
const minPoll = 10 * time.Millisecond

// remoteRun is one attempt on the remote host, followed by one Run call.
type remoteRun struct {
	b    *Backend
	spec backends.Spec
	out  backends.Output
	dir  string
	c    *conn

	files [2]*sftp.File // stdout, stderr
	offs  [2]int64
	buf   []byte
}

// Run implements backends.Backend. See the package documentation.
func (b *Backend) Run(ctx context.Context, spec backends.Spec, out backends.Output) (backends.Result, error) {
	res := backends.Result{ExitCode: -1}
	if ctx.Err() != nil {
		return res, fmt.Errorf("ssh: not started: %w", context.Cause(ctx))
	}
	if spec.Session != "" {
		return res, errNotRemote("session")
	}
	if spec.Container != nil {
		return res, errNotRemote("container")
	}
	if spec.JobID == "" || !safeArgRE.MatchString(spec.JobID) {
		return res, fmt.Errorf("%w: ssh: job id %q cannot name a run directory", backends.ErrPermanent, spec.JobID)
	}
	c, err := b.pool.getRetry(ctx, b.cfg.ReconnectTimeout)
	if err != nil {
		return res, runErr(ctx, "connect", err)
	}
	r := &remoteRun{b: b, spec: spec, out: out, dir: b.runDir(spec.JobID, spec.Attempt), c: c, buf: make([]byte, 64<<10)}
	defer r.closeFiles()

	// The launch is not cut short by ctx: a launch that may have happened
	// must be known, so that a stop reaches it.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.target.connTimeout+b.cfg.ReconnectTimeout+spec.Grace()+10*time.Second)
	err = r.launch(ctx, lctx)
	cancel()
	if err != nil {
		return res, runErr(ctx, "launch", err)
	}
	res.StartedAt = time.Now()
	b.mu.Lock()
	b.dirs[fmt.Sprintf("%s-%d", spec.JobID, spec.Attempt)] = r.dir
	b.mu.Unlock()

	var stopErr error
	err = r.follow(ctx)
	if err != nil && ctx.Err() != nil {
		stopErr = r.stop()
	} else if err != nil {
		return res, runErr(ctx, "follow", err)
	}
	res.FinishedAt = time.Now()
	if code, sig, ok := r.exitStatus(); ok {
		res.ExitCode, res.Signal = code, sig
	}
	if stopErr != nil {
		return res, fmt.Errorf("ssh: %w; stopping the remote job failed, its watchdog will end it: %w", context.Cause(ctx), stopErr)
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("ssh: %w", context.Cause(ctx))
	}
	return res, nil
}

// runErr words a failed step, wrapping the context's cause when it ended
// the step.
func runErr(ctx context.Context, step string, err error) error {
	if ctx.Err() != nil && !errors.Is(err, context.Cause(ctx)) {
		return fmt.Errorf("ssh: %s: %w (%w)", step, context.Cause(ctx), err)
	}
	return fmt.Errorf("ssh: %s: %w", step, err)
}

// launch starts the attempt detached on the remote host, after dealing
// with the job's earlier attempts still there (killed, or one adopted under
// on_orphan: adopt — then r.dir is its run directory). It retries on a new
// connection if the link drops: the launch script is idempotent. Under
// ctx's deadline, the remote watchdog ends the job that much later (plus
// the grace and WatchdogMargin) even if no worker does.
func (r *remoteRun) launch(ctx, lctx context.Context) error {
	watchdog := 0
	if dl, ok := ctx.Deadline(); ok {
		watchdog = int(math.Ceil((time.Until(dl) + r.spec.Grace() + r.b.cfg.WatchdogMargin).Seconds()))
	}
	cwd, ws := r.spec.Dir, ""
	if r.spec.Workspace != "" {
		ws = r.b.workspaceDir(r.spec.Deployment, r.spec.Workspace)
		if !path.IsAbs(cwd) {
			cwd = path.Join(ws, cwd)
		}
	}
	script, args, err := launch{
		dir: r.dir, command: r.spec.Command, cwd: cwd, ws: ws, env: r.spec.Env,
		meta:     runMeta{job: r.spec.JobID, attempt: r.spec.Attempt, worker: r.spec.Worker, deployment: r.spec.Deployment},
		onOrphan: r.b.cfg.OnOrphan, watchdog: watchdog, grace: r.spec.Grace(),
	}.script()
	if err != nil {
		return fmt.Errorf("%w: %w", backends.ErrPermanent, err)
	}
	var out string
	err = r.b.withConn(lctx, &r.c, func(c *conn) error {
		var err error
		out, err = r.b.exec(lctx, c, script, args...)
		return err
	})
	r.b.countKills(out)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(line, "adopt "); ok {
			r.dir = path.Join(r.b.cfg.RunRoot, name)
			if m := r.b.cfg.Metrics; m != nil {
				m.SSHResumedStreams.WithLabelValues(r.b.cfg.Profile).Inc()
			}
			return nil
		}
		if line == "launched" {
			return nil
		}
	}
	return fmt.Errorf("%w: launch: unexpected answer %q", backends.ErrPermanent, out)
}

// countKills counts the "sent SIG" lines of a stop in the metrics.
func (b *Backend) countKills(out string) {
	if b.cfg.Metrics == nil {
		return
	}
	for _, line := range strings.Split(out, "\n") {
		if sig, ok := strings.CutPrefix(line, "sent "); ok {
			b.cfg.Metrics.SSHRemoteKills.WithLabelValues(b.cfg.Profile, "SIG"+sig).Inc()
		}
	}
}

// withConn runs f on *cp, re-dialling and retrying while f fails because
// the connection broke. *cp is left pointing at the connection in use.
func (b *Backend) withConn(ctx context.Context, cp **conn, f func(*conn) error) error {
	for {
		err := f(*cp)
		if err == nil || !(*cp).isDead() || ctx.Err() != nil {
			return err
		}
		b.pool.broken(*cp)
		c, derr := b.pool.getRetry(ctx, b.cfg.ReconnectTimeout)
		if derr != nil {
			return derr
		}
		*cp = c
	}
}

// follow copies the output until the exit status is recorded. A broken
// connection is re-dialled and the streams resume from their offsets.
func (r *remoteRun) follow(ctx context.Context) error {
	wait := minPoll
	for {
		ended, n, err := r.step()
		if errors.Is(err, errGone) {
			return fmt.Errorf("%s: %w", r.dir, err)
		}
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			if err := r.reconnect(ctx); err != nil {
				return err
			}
			continue
		}
		if ended {
			return nil
		}
		if n > 0 {
			wait = minPoll
		} else {
			wait = min(wait*3/2, r.b.cfg.PollInterval)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(wait):
		}
	}
}

// closeFiles closes the output streams' remote handles.
func (r *remoteRun) closeFiles() {
	for i, f := range r.files {
		if f != nil {
			_ = f.Close()
		}
		r.files[i] = nil
	}
}

// reconnect replaces a broken connection and reopens nothing yet: the
// next step opens the streams again at their offsets.
func (r *remoteRun) reconnect(ctx context.Context) error {
	r.b.pool.broken(r.c)
	r.files = [2]*sftp.File{}
	c, err := r.b.pool.getRetry(ctx, r.b.cfg.ReconnectTimeout)
	if err != nil {
		return err
	}
	r.c = c
	if m := r.b.cfg.Metrics; m != nil {
		m.SSHResumedStreams.WithLabelValues(r.b.cfg.Profile).Inc()
	}
	return nil
}

// step checks for the exit status, then reads both streams to their
// current end: once exit is seen before a read, that read is the last.
// A step that finds neither exit nor new output checks that the run
// directory is still there: streams already open read on after their
// files are removed, so a run reaped (stopped and removed) between two
// steps would otherwise be followed for ever.
func (r *remoteRun) step() (ended bool, n int64, err error) {
	_, err = r.c.sftp.Stat(r.dir + "/exit")
	switch {
	case err == nil:
		ended = true
	case errors.Is(err, fs.ErrNotExist):
	default:
		return false, 0, err
	}
	for i, w := range []io.Writer{r.out.Stdout, r.out.Stderr} {
		k, err := r.read(i, w)
		n += k
		if err != nil {
			return false, n, err
		}
	}
	if !ended && n == 0 {
		if _, err := r.c.sftp.Stat(r.dir); errors.Is(err, fs.ErrNotExist) {
			return false, 0, errGone
		} else if err != nil {
			return false, 0, err
		}
	}
	return ended, n, nil
}

var streamNames = [2]string{"stdout", "stderr"}

// read copies stream i from its offset to its current end into w.
func (r *remoteRun) read(i int, w io.Writer) (int64, error) {
	if r.files[i] == nil {
		f, err := r.c.sftp.Open(r.dir + "/" + streamNames[i])
		if errors.Is(err, fs.ErrNotExist) {
			// Not created yet — or the whole run directory is gone.
			if _, err := r.c.sftp.Stat(r.dir); errors.Is(err, fs.ErrNotExist) {
				return 0, errGone
			}
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		r.files[i] = f
	}
	var total int64
	for {
		n, err := r.files[i].ReadAt(r.buf, r.offs[i])
		if n > 0 {
			if w != nil {
				_, _ = w.Write(r.buf[:n])
			}
			r.offs[i] += int64(n)
			total += int64(n)
		}
		if errors.Is(err, io.EOF) || (err == nil && n < len(r.buf)) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// stop ends the attempt after ctx is done: TERM to its process group,
// KILL after the grace (one remote script does both), reading the output
// written meanwhile. It has its own budget, since ctx is over.
func (r *remoteRun) stop() error {
	grace := r.spec.Grace()
	ctx, cancel := context.WithTimeout(context.Background(), grace+min(r.b.cfg.ReconnectTimeout, 15*time.Second))
	defer cancel()
	done := make(chan error, 1)
	cp := r.c
	go func() { done <- r.b.stopDir(ctx, &cp, r.dir, grace) }()
	for {
		select {
		case err := <-done:
			r.c = cp
			r.drainQuietly()
			return err
		case <-time.After(50 * time.Millisecond):
			r.drainQuietly()
		}
	}
}

// drainQuietly reads what output there is, ignoring errors: it runs while
// stopping, when the exit status matters more.
func (r *remoteRun) drainQuietly() {
	if r.c.isDead() {
		r.files = [2]*sftp.File{}
		return
	}
	_, _, _ = r.step()
}

// stopDir stops a run with stopScript, on a new connection if the link
// drops meanwhile.
func (b *Backend) stopDir(ctx context.Context, cp **conn, dir string, grace time.Duration) error {
	return b.withConn(ctx, cp, func(c *conn) error {
		out, err := b.exec(ctx, c, stopScript, dir, strconv.Itoa(tenths(grace)))
		b.countKills(out)
		return err
	})
}

// exitStatus reads the recorded exit status. A status above 128 after a
// signal from sandrun (or the watchdog) is reported as that signal.
func (r *remoteRun) exitStatus() (code int, signal string, ok bool) {
	if r.c.isDead() {
		return 0, "", false
	}
	// The supervisor creates exit, then writes it: an empty read is retried.
	var err error
	for range 100 {
		var data []byte
		if data, err = r.readFile("exit"); err != nil {
			return 0, "", false
		}
		if code, err = strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return 0, "", false
	}
	if code > 128 && code < 128+65 {
		if _, err := r.readFile("killed"); err == nil {
			name := unix.SignalName(syscall.Signal(code - 128))
			if name == "" {
				name = "signal " + strconv.Itoa(code-128)
			}
			return -1, name, true
		}
	}
	return code, "", true
}

func (r *remoteRun) readFile(name string) ([]byte, error) {
	f, err := r.c.sftp.Open(r.dir + "/" + name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return io.ReadAll(io.LimitReader(f, 4096))
}
