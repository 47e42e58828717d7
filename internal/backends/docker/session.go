package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/backends"
)

// LabelSession marks a session container with its session key.
const LabelSession = "io.sandrun.session"

// session is a long-lived container that jobs with the same session key
// exec into.
type session struct {
	id       string
	lastUsed time.Time
}

// sessionContainer returns the running container of spec's session,
// creating it on first use (once per key, even under concurrent runs).
func (d *Docker) sessionContainer(ctx context.Context, spec backends.Spec) (string, error) {
	d.sessMu.Lock()
	defer d.sessMu.Unlock()
	if d.sessions == nil {
		d.sessions = map[string]*session{}
	}
	if s := d.sessions[spec.Session]; s != nil {
		// Not inspected on each use: an exec into a dead container fails,
		// and runExec then drops the session and asks again.
		s.lastUsed = time.Now()
		return s.id, nil
	}
	// The session container holds no job's environment: each exec brings
	// its own.
	base := spec
	base.Env, base.Command = nil, ""
	cfg, host, err := d.containerConfig(base)
	if err != nil {
		return "", err
	}
	cfg.Cmd = []string{"/bin/sh", "-c", "exec sleep 2147483647"}
	cfg.Labels[LabelSession] = spec.Session
	cfg.Labels[LabelJob] = ""
	created, err := d.api.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host})
	if err != nil {
		return "", fmt.Errorf("docker: create session %s: %w: %w", spec.Session, err, backends.ErrUnavailable)
	}
	if _, err := d.api.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		d.remove(ctx, created.ID)
		return "", fmt.Errorf("docker: start session %s: %w", spec.Session, err)
	}
	d.sessions[spec.Session] = &session{id: created.ID, lastUsed: time.Now()}
	return created.ID, nil
}

// errExecCreate marks runExec's failure to create the exec: the session
// container may have died, and runSession replaces it once.
var errExecCreate = errors.New("exec not created")

// runSession runs spec in its session's container: created from spec's own
// configuration on first use, else joined. A joined container is held to
// what HostAccess judges (see sessionjoin.go) — checked again here, as
// the session may have been created after the job was judged.
func (d *Docker) runSession(ctx context.Context, spec backends.Spec, own *container.HostConfig, out backends.Output) (backends.Result, error) {
	res := backends.Result{ExitCode: -1}
	bg := context.WithoutCancel(ctx)
	judgedHostAccess, judged := d.judged.take(spec)
	for replaced := false; ; replaced = true {
		cid, err := d.sessionContainer(bg, spec)
		if err != nil {
			return res, err
		}
		joined, err := d.inspectSession(bg, spec, cid, own)
		if err != nil {
			return res, err
		}
		if joined == nil {
			// Gone or stopped since it was created or last used.
			d.dropSession(bg, cid)
			if replaced {
				return res, fmt.Errorf("docker: session %q: its new container %.12s is not running: %w", spec.Session, cid, backends.ErrUnavailable)
			}
			continue
		}
		reasons, err := hostAccess(bg, joined.host, d.volumeDriverOptions, d.cfg.AllowedVolumeDrivers)
		if err != nil {
			return res, fmt.Errorf("docker: %w", err)
		}
		for i, r := range reasons {
			reasons[i] = joined.describe(r)
		}
		switch {
		case len(reasons) > 0 && !d.cfg.AllowHostAccess:
			return res, fmt.Errorf("docker: host access refused (%s): %w", strings.Join(reasons, "; "), backends.ErrPermanent)
		case len(reasons) > 0 && judged && !judgedHostAccess:
			return res, fmt.Errorf("docker: %w (%s): judged again on retry", ErrSessionJudged, strings.Join(reasons, "; "))
		}
		res, err = d.runExec(ctx, cid, spec, out)
		if errors.Is(err, errExecCreate) && !replaced {
			d.dropSession(bg, cid)
			continue
		}
		return res, err
	}
}

// runExec runs spec in session container cid. The command runs as its own
// process group (docker makes each exec a group leader); its pid is kept
// in a file so that a timeout or cancel signals the whole group inside the
// container — not just the exec's client — and leftovers are killed when
// the command ends, like the local backend does.
func (d *Docker) runExec(ctx context.Context, cid string, spec backends.Spec, out backends.Output) (backends.Result, error) {
	res := backends.Result{ExitCode: -1}
	bg := context.WithoutCancel(ctx)
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	pidfile := "/tmp/.sandrun-" + hex.EncodeToString(nonce)
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		env = append(env, k+"="+spec.Env[k])
	}
	create := client.ExecCreateOptions{
		User: d.cfg.User, AttachStdout: true, AttachStderr: true, Env: env, WorkingDir: spec.Dir,
		Cmd: []string{"/bin/sh", "-c", `echo $$ > ` + pidfile + `; exec /bin/sh -c "$0"`, spec.Command},
	}
	ex, err := d.api.ExecCreate(bg, cid, create)
	if err != nil {
		return res, fmt.Errorf("docker: exec create: %w: %w", err, errExecCreate)
	}
	att, err := d.api.ExecAttach(bg, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return res, fmt.Errorf("docker: exec attach: %w", err)
	}
	defer att.Close()
	res.StartedAt = time.Now()
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(nonNil(out.Stdout), nonNil(out.Stderr), att.Reader)
		copied <- err
	}()

	stopped := false
	running := func() (client.ExecInspectResult, bool) {
		r, err := d.api.ExecInspect(bg, ex.ID, client.ExecInspectOptions{})
		return r, err == nil && r.Running
	}
	// The output stream ends when the command does (unless something it
	// started holds the stream open); polling covers that case.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var final client.ExecInspectResult
	var copyErr error
	copyDone := false
wait:
	for {
		select {
		case copyErr = <-copied:
			copyDone = true
			copied = nil
		case <-tick.C:
		case <-ctx.Done():
			stopped = true
			final = d.stopExec(bg, cid, pidfile, spec.Grace(), running)
			break wait
		}
		if r, ok := running(); !ok {
			final = r
			break wait
		}
	}
	res.FinishedAt = time.Now()
	// Whatever the command left behind in its group goes with it — after
	// the result is returned: the job's outcome does not wait for it.
	d.cleanups.Go(func() {
		d.execQuiet(bg, cid, killGroupScript(pidfile, "KILL")+"; rm -f "+pidfile)
	})
	if !copyDone {
		select {
		case copyErr = <-copied:
		case <-time.After(outputDrain):
		}
	}
	res.ExitCode = final.ExitCode
	return outcome(ctx, res, stopped, copyErr)
}

// stopExec signals the exec's process group: TERM, then KILL after grace;
// if it still will not die, the session container is killed and dropped.
func (d *Docker) stopExec(ctx context.Context, cid, pidfile string, grace time.Duration, running func() (client.ExecInspectResult, bool)) client.ExecInspectResult {
	kill := func(sig string) {
		d.execQuiet(ctx, cid, killGroupScript(pidfile, sig))
	}
	waitExit := func(d time.Duration) (client.ExecInspectResult, bool) {
		deadline := time.Now().Add(d)
		for {
			r, ok := running()
			if !ok {
				return r, true
			}
			if time.Now().After(deadline) {
				return r, false
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	kill("TERM")
	if r, ok := waitExit(grace); ok {
		return r
	}
	kill("KILL")
	if r, ok := waitExit(5 * time.Second); ok {
		return r
	}
	_, _ = d.api.ContainerKill(ctx, cid, client.ContainerKillOptions{Signal: "SIGKILL"})
	d.dropSession(ctx, cid)
	r, _ := waitExit(5 * time.Second)
	return r
}

// killGroupScript signals the process group whose leader's pid is in
// pidfile.
func killGroupScript(pidfile, sig string) string {
	return `p=$(cat ` + pidfile + ` 2>/dev/null) && kill -` + sig + ` -"$p" 2>/dev/null`
}

// execQuiet runs a helper command in the container, waiting for it, and
// ignores its outcome. It runs as the jobs' user: with every capability
// dropped, even root could not signal another user's processes.
func (d *Docker) execQuiet(ctx context.Context, cid, script string) {
	ex, err := d.api.ExecCreate(ctx, cid, client.ExecCreateOptions{User: d.cfg.User, Cmd: []string{"/bin/sh", "-c", script}})
	if err != nil {
		return
	}
	att, err := d.api.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return
	}
	defer att.Close()
	_, _ = io.Copy(io.Discard, att.Reader)
}

// dropSession forgets and removes the session container cid.
func (d *Docker) dropSession(ctx context.Context, cid string) {
	d.sessMu.Lock()
	for k, s := range d.sessions {
		if s.id == cid {
			delete(d.sessions, k)
		}
	}
	d.sessMu.Unlock()
	d.remove(ctx, cid)
}

// closeSessions removes every session container of this backend.
func (d *Docker) closeSessions(ctx context.Context) {
	d.sessMu.Lock()
	ids := make([]string, 0, len(d.sessions))
	for _, s := range d.sessions {
		ids = append(ids, s.id)
	}
	d.sessions = nil
	d.sessMu.Unlock()
	for _, id := range ids {
		d.remove(ctx, id)
	}
}

// reapIdleSessions removes session containers unused for SessionIdle.
func (d *Docker) reapIdleSessions(ctx context.Context) int {
	d.sessMu.Lock()
	var idle []string
	for k, s := range d.sessions {
		if time.Since(s.lastUsed) > d.cfg.SessionIdle {
			idle = append(idle, s.id)
			delete(d.sessions, k)
		}
	}
	d.sessMu.Unlock()
	for _, id := range idle {
		d.remove(ctx, id)
	}
	return len(idle)
}
