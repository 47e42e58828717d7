package docker

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/backends"
)

// wrapperScript is a pooled container's command: it reads its stdin to
// the end (with shell built-ins only: the image may have nothing but
// /bin/sh) and evaluates it. What it reads is a payload (below), which
// ends by exec'ing the job's command.
const wrapperScript = `_sandrun_p=; while IFS= read -r _sandrun_l; do _sandrun_p="$_sandrun_p$_sandrun_l
"; done; eval "$_sandrun_p$_sandrun_l"`

// ack is the payload's status byte: its first byte of stdout, written
// right before it execs the job (runPooled strips it). A container that
// exits without it never ran the job, and Run makes a fresh container.
const ack = '\x06'

// refillDelay is how long a pooled job runs before the refill its claim
// made due starts anyway.
const refillDelay = time.Second

// maxPayload bounds a payload the wrapper reads (byte by byte, as
// shells read a pipe): a longer one runs in a fresh container.
const maxPayload = 64 << 10

// shellName is a variable name every shell can export.
var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// shellSpecial are variables the wrapper's shell sets or guards: a job
// that sets one runs in a fresh container, where no wrapper touched them.
var shellSpecial = map[string]bool{
	"PWD": true, "OLDPWD": true, "SHLVL": true, "_": true,
	// read-only in bash
	"BASHOPTS": true, "BASH_VERSINFO": true, "EUID": true, "PPID": true, "SHELLOPTS": true, "UID": true,
}

// payload is what the wrapper of a pooled container evaluates for spec.
// It makes the job's process what a fresh container's would be: the same
// working directory (cd -P: the physical path, as a container started
// there sees; OLDPWD as it was), SHLVL as a fresh shell would find it
// (busybox's sh raised it on start; bash's exec lowers it), the job's
// environment on top of the container's (as docker puts Config.Env over
// the image's), stdin opened read-write on /dev/null (docker's stdin for
// a container without one) and the command as `/bin/sh -c`. A directory
// that cannot be entered (docker would have made it) ends the wrapper
// before the ack byte.
func payload(spec backends.Spec, level shellLevel) string {
	var b strings.Builder
	if spec.Dir != "" {
		b.WriteString("_sandrun_o=${OLDPWD-}; _sandrun_u=${OLDPWD+x}\n")
		fmt.Fprintf(&b, "cd -P -- %s 2>/dev/null || exit 0\n", shQuote(spec.Dir))
		b.WriteString(`if [ -n "$_sandrun_u" ]; then OLDPWD=$_sandrun_o; else unset OLDPWD; fi` + "\n")
	}
	fmt.Fprintf(&b, `if [ -n "${BASH_VERSION-}" ]; then export SHLVL=%d; `, level.bash())
	if level.set {
		fmt.Fprintf(&b, "else export SHLVL=%s; fi\n", shQuote(level.value))
	} else {
		b.WriteString("else unset SHLVL; fi\n")
	}
	b.WriteString(`printf '\006' || exit 0` + "\n")
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		fmt.Fprintf(&b, "export %s\n", shQuote(k+"="+spec.Env[k]))
	}
	fmt.Fprintf(&b, "exec /bin/sh -c %s <>/dev/null\n", shQuote(spec.Command))
	return b.String()
}

// shQuote quotes s for sh as one word.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// poolable reports whether spec may run in a pooled container: a plain
// one-shot job whose directory, environment and command the wrapper can
// pass on unchanged.
func poolable(spec backends.Spec) bool {
	if spec.Session != "" || spec.Workspace != "" || (spec.Dir != "" && !path.IsAbs(spec.Dir)) ||
		strings.ContainsRune(spec.Command, 0) || strings.ContainsRune(spec.Dir, 0) {
		return false
	}
	for k, v := range spec.Env {
		if !shellName.MatchString(k) || shellSpecial[k] || strings.HasPrefix(k, "_sandrun_") || strings.ContainsRune(v, 0) {
			return false
		}
	}
	return true
}

// claim hands spec an idle container of its pool when the profile has
// one and spec's container would be configured exactly as the pool's
// (cfg and host: spec's fresh configuration), and starts a fill when the
// pool runs short.
func (d *Docker) claim(ctx context.Context, spec backends.Spec, cfg *container.Config, host *container.HostConfig) (pooledContainer, bool) {
	if d.pools.size == 0 || !poolable(spec) {
		return pooledContainer{}, false
	}
	key := poolKey{spec.Deployment, spec.Worker}
	base, baseHost, err := d.containerConfig(backends.Spec{Deployment: key.deployment, Worker: key.worker})
	if err != nil || cfg.Image != base.Image || !reflect.DeepEqual(host, baseHost) {
		return pooledContainer{}, false
	}
	if len(payload(spec, shellLevel{})) > maxPayload {
		return pooledContainer{}, false
	}
	c, ok, fill := d.pools.take(key)
	if fill {
		start := sync.OnceFunc(func() { go d.fill(context.WithoutCancel(ctx), key) })
		if !ok {
			start()
		} else {
			c.fill = start // runPooled starts it once the job's container runs
		}
	}
	return c, ok
}

// claimPrefix starts the name of a claimed pooled container.
const claimPrefix = "sandrun-claim."

// claimName is the name a pooled container takes when spec claims it:
// the job and attempt that its labels cannot hold, for ReapOrphans and
// Orphans (attemptOf), and the container's ID, which keeps it unique.
func claimName(spec backends.Spec, id string) string {
	return fmt.Sprintf("%s%d.%s.%.12s", claimPrefix, spec.Attempt, escapeName(spec.JobID), id)
}

// escapeName writes s in the characters of a container name, less '.'
// and '_', which escape every other byte as _XX.
func escapeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return b.String()
}

func unescapeName(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '_' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), true
}

// attemptOf reads whose job attempt a listed container is: its labels,
// or, for a pooled container, the worker's label and the job and attempt
// of the name a claim gave it. idle is a pooled container no job claimed.
func attemptOf(c container.Summary) (job string, attempt int, worker string, idle bool) {
	worker = c.Labels[LabelWorker]
	if c.Labels[LabelPool] == "" {
		attempt, _ = strconv.Atoi(c.Labels[LabelAttempt])
		return c.Labels[LabelJob], attempt, worker, false
	}
	for _, n := range c.Names {
		rest, ok := strings.CutPrefix(strings.TrimPrefix(n, "/"), claimPrefix)
		if !ok {
			continue
		}
		parts := strings.Split(rest, ".")
		if len(parts) != 3 {
			continue
		}
		a, err := strconv.Atoi(parts[0])
		j, ok := unescapeName(parts[1])
		if err == nil && ok {
			return j, a, worker, false
		}
	}
	return "", 0, worker, true
}

// discard removes a claimed pooled container after its job, or unused,
// without making anyone wait for it (Close does), and starts the fill
// its claim made due if its job has not.
func (d *Docker) discard(ctx context.Context, c pooledContainer) {
	c.startFill()
	d.pools.removingStarts()
	d.cleanups.Go(func() {
		d.remove(ctx, c.id)
		d.pools.removed(c.id)
	})
}

// ackWriter passes the job's stdout on, less the wrapper's leading ack
// byte; anything before an ack (nothing, by the protocol) is dropped.
type ackWriter struct {
	w     io.Writer
	mu    sync.Mutex
	first bool // the first byte has been seen
	acked bool
}

func (a *ackWriter) Write(p []byte) (int, error) {
	a.mu.Lock()
	if !a.first && len(p) > 0 {
		a.first, a.acked = true, p[0] == ack
		a.mu.Unlock()
		if !a.acked {
			return len(p), nil
		}
		n, err := a.w.Write(p[1:])
		return n + 1, err
	}
	acked := a.acked
	a.mu.Unlock()
	if !acked {
		return len(p), nil
	}
	return a.w.Write(p)
}

func (a *ackWriter) ran() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.acked
}

// runPooled runs spec in the claimed pooled container c, whose wrapper
// waits on its stdin: renamed for the job, attached (stdin too), fed the
// payload, waited for, stopped like a fresh one on ctx, and removed in
// the background. ran is false when the job did not start there (the
// container had stopped, or the wrapper could not enter the job's
// directory): Run then makes a fresh container, and the outcome is that
// one's.
func (d *Docker) runPooled(ctx context.Context, spec backends.Spec, c pooledContainer, out backends.Output) (res backends.Result, ran bool, err error) {
	res = backends.Result{ExitCode: -1}
	bg := context.WithoutCancel(ctx)
	defer d.discard(bg, c)

	// The name holds the job's identity before the container starts, so
	// that a reaper finds the attempt whatever happens next.
	var (
		wg        sync.WaitGroup
		renameErr error
		att       client.ContainerAttachResult
		attErr    error
		running   bool
	)
	wg.Go(func() {
		_, renameErr = d.api.ContainerRename(bg, c.id, client.ContainerRenameOptions{NewName: claimName(spec, c.id)})
	})
	wg.Go(func() {
		// An idle container can have stopped (an engine restart, a
		// kill): attaching to it would wait for a start that never comes.
		info, err := d.api.ContainerInspect(bg, c.id, client.ContainerInspectOptions{})
		running = err == nil && info.Container.State != nil && info.Container.State.Running
	})
	wg.Go(func() {
		att, attErr = d.api.ContainerAttach(bg, c.id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	})
	waitCtx, stopWait := context.WithCancel(bg)
	defer stopWait()
	wait := d.api.ContainerWait(waitCtx, c.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	wg.Wait()
	if attErr == nil {
		defer att.Close()
	}
	if renameErr != nil || attErr != nil || !running {
		return res, false, nil
	}
	stdout := &ackWriter{w: nonNil(out.Stdout)}
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, nonNil(out.Stderr), att.Reader)
		copied <- err
	}()
	// The wrapper reads the payload up to the end of its stdin.
	if _, err := io.WriteString(att.Conn, payload(spec, c.level)); err != nil {
		return res, false, nil
	}
	if err := att.CloseWrite(); err != nil {
		return res, false, nil
	}
	res.StartedAt = time.Now()
	// The refill waits for the job's exit, or a second of its run: a
	// create competes with a container's start and exit for the engine.
	refill := time.AfterFunc(refillDelay, c.startFill)
	defer refill.Stop()

	status, stopped, werr := d.await(ctx, bg, c.id, spec.Grace(), time.Time{}, wait)
	res.FinishedAt = time.Now()
	c.startFill()
	if werr != nil {
		return res, true, fmt.Errorf("docker: wait: %w", werr)
	}
	var copyErr error
	drained := false
	select {
	case copyErr = <-copied:
		drained = true
	case <-time.After(outputDrain):
	}
	if !stopped && !stdout.ran() {
		if drained {
			return res, false, nil
		}
		return res, true, fmt.Errorf("docker: pooled container %.12s: no word from its wrapper %s after it exited: %w", c.id, outputDrain, backends.ErrUnavailable)
	}
	res, err = d.ended(ctx, bg, c.id, res, status, stopped, copyErr)
	return res, true, err
}
