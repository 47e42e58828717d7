package modal

import (
	"context"
	"time"

	modal "github.com/modal-labs/modal-client/go"

	"github.com/sandrun/sandrun/internal/backends"
)

// session is a sandbox the jobs of one session key share.
type session struct {
	key      string
	sb       *modal.Sandbox
	users    int       // jobs running in it; guarded by Backend.mu
	lastUsed time.Time // when the last of them ended; guarded by Backend.mu
}

// workload is where one job runs: a sandbox of its own, or its session's.
type workload struct {
	b         *Backend
	sb        *modal.Sandbox
	session   *session // nil for a job's own sandbox
	workspace bool     // a workspace volume is mounted in sb
}

// acquire returns spec's workload, counted as in use until release.
func (b *Backend) acquire(ctx context.Context, c *conn, img *modal.Image, spec backends.Spec) (*workload, error) {
	if spec.Session != "" {
		s, err := b.joinSession(ctx, c, img, spec)
		if err != nil {
			return nil, err
		}
		return &workload{b: b, sb: s.sb, session: s}, nil
	}
	params := b.createParams(ctx, spec)
	if err := c.mountWorkspace(ctx, spec, params); err != nil {
		return nil, err
	}
	sb, err := b.create(ctx, c, img, params)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.running[sb.SandboxID]++
	b.mu.Unlock()
	return &workload{b: b, sb: sb, workspace: spec.Workspace != ""}, nil
}

// joinSession returns the running sandbox of spec's session, creating it
// on first use — once per key, even under concurrent runs. Joining
// re-tags the sandbox with the job (the reaper reads the tags); a sandbox
// that cannot be tagged is taken for gone and replaced.
func (b *Backend) joinSession(ctx context.Context, c *conn, img *modal.Image, spec backends.Spec) (*session, error) {
	b.sessMu.Lock()
	defer b.sessMu.Unlock()
	b.mu.Lock()
	s := b.sessions[spec.Session]
	if s != nil {
		s.users++
	}
	b.mu.Unlock()
	if s != nil {
		tctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		err := s.sb.SetTags(tctx, tags(spec, true), nil)
		cancel()
		if err == nil {
			return s, nil
		}
		b.cfg.Logger.Warn("modal: session sandbox gone, starting another", "sandbox", s.sb.SandboxID, "err", err)
		b.leave(s)
		b.dropSession(ctx, s)
	}
	sb, err := b.create(ctx, c, img, b.createParams(ctx, spec))
	if err != nil {
		return nil, err
	}
	s = &session{key: spec.Session, sb: sb, users: 1}
	b.mu.Lock()
	closed := b.closed
	if !closed {
		b.sessions[s.key] = s
	}
	b.mu.Unlock()
	if closed {
		b.terminate(ctx, sb)
		_ = sb.Detach()
		return nil, errClosed
	}
	return s, nil
}

// leave counts one job out of s.
func (b *Backend) leave(s *session) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s.users--
	s.lastUsed = time.Now()
}

// dropSession forgets s and terminates its sandbox.
func (b *Backend) dropSession(ctx context.Context, s *session) {
	b.mu.Lock()
	if b.sessions[s.key] == s {
		delete(b.sessions, s.key)
	}
	b.mu.Unlock()
	b.terminate(ctx, s.sb)
	_ = s.sb.Detach()
}

// reapIdleSessions terminates the sessions no job has used for
// SessionIdle, and returns how many.
func (b *Backend) reapIdleSessions(ctx context.Context) int {
	b.mu.Lock()
	var idle []*session
	for k, s := range b.sessions {
		if s.users == 0 && time.Since(s.lastUsed) >= b.cfg.SessionIdle {
			idle = append(idle, s)
			delete(b.sessions, k)
		}
	}
	b.mu.Unlock()
	for _, s := range idle {
		b.terminate(ctx, s.sb)
		_ = s.sb.Detach()
	}
	return len(idle)
}

// closeSessions terminates every session sandbox of this backend.
func (b *Backend) closeSessions(ctx context.Context) {
	b.mu.Lock()
	all := make([]*session, 0, len(b.sessions))
	for k, s := range b.sessions {
		all = append(all, s)
		delete(b.sessions, k)
	}
	b.mu.Unlock()
	for _, s := range all {
		b.terminate(ctx, s.sb)
		_ = s.sb.Detach()
	}
}

// owns reports whether the sandbox with id is in use by this backend.
func (b *Backend) owns(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running[id] > 0 {
		return true
	}
	for _, s := range b.sessions {
		if s.sb.SandboxID == id {
			return true
		}
	}
	return false
}

// endJob ends what the job left running: a job sandbox is terminated, in
// a session sandbox the job's process group is killed.
func (w *workload) endJob(ctx context.Context, pidfile string) {
	if w.session == nil {
		w.b.terminate(ctx, w.sb)
		return
	}
	if err := w.b.signal(ctx, w.sb, pidfile, "KILL", true); err != nil {
		w.b.cfg.Logger.Warn("modal: kill what a session job left", "sandbox", w.sb.SandboxID, "err", err)
	}
}

// abandon gives up on a job that will not die: its sandbox is terminated,
// a session's along with the session.
func (w *workload) abandon(ctx context.Context) {
	if w.session == nil {
		w.b.terminate(ctx, w.sb)
		return
	}
	w.b.dropSession(ctx, w.session)
}

// release counts the job out of its workload; a job sandbox, terminated
// by then, lets go of its connection.
func (w *workload) release() {
	if w.session != nil {
		w.b.leave(w.session)
		return
	}
	_ = w.sb.Detach()
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	if w.b.running[w.sb.SandboxID]--; w.b.running[w.sb.SandboxID] <= 0 {
		delete(w.b.running, w.sb.SandboxID)
	}
}
