package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/sandrun/sandrun/internal/backends"
)

// conn is one multiplexed connection to the host (through its jump hosts)
// with its file-transfer session. Every job of the profile shares it.
type conn struct {
	client *ssh.Client
	hops   []*ssh.Client
	sftp   *sftp.Client
	dead   chan struct{}
	once   sync.Once
}

// close tears the connection down; it is safe to call more than once.
func (c *conn) close() {
	c.once.Do(func() {
		close(c.dead)
		// The transport first: on a silent link, closing the file-transfer
		// session would wait for an answer that never comes.
		_ = c.client.Close()
		if c.sftp != nil {
			_ = c.sftp.Close()
		}
		for i := len(c.hops) - 1; i >= 0; i-- {
			_ = c.hops[i].Close()
		}
	})
}

func (c *conn) isDead() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// pool holds the profile's connection: dialled on first use, re-dialled
// (one dial at a time) after it breaks, and bounding the exec sessions
// open on it.
type pool struct {
	b   *Backend
	sem chan struct{}

	mu        sync.Mutex
	cur       *conn
	dialing   chan struct{} // closed when the dial in flight ends
	connected bool          // a connection was up before: the next dial is a reconnect
	closed    bool
}

var errClosed = errors.New("ssh: backend closed")

// get returns the live connection, dialling once if there is none.
func (p *pool) get(ctx context.Context) (*conn, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errClosed
		}
		if c := p.cur; c != nil && !c.isDead() {
			p.mu.Unlock()
			return c, nil
		}
		if ch := p.dialing; ch != nil {
			p.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		ch := make(chan struct{})
		p.dialing = ch
		reconnect := p.connected
		p.mu.Unlock()

		c, err := p.b.dial(ctx)

		p.mu.Lock()
		p.dialing = nil
		close(ch)
		if err == nil {
			if p.closed {
				c.close()
				err = errClosed
			} else {
				p.cur, p.connected = c, true
			}
		}
		p.mu.Unlock()
		m := p.b.cfg.Metrics
		if m != nil {
			result := "ok"
			if err != nil {
				result = "error"
			}
			m.SSHConnections.WithLabelValues(p.b.cfg.Profile, result).Inc()
			if err == nil {
				m.SSHConnected.WithLabelValues(p.b.cfg.Profile).Set(1)
				if reconnect {
					m.SSHReconnects.WithLabelValues(p.b.cfg.Profile).Inc()
				}
			}
		}
		if err != nil {
			return nil, err
		}
		go p.watch(c)
		return c, nil
	}
}

// getRetry is get with retries and backoff until it succeeds, ctx is done
// or the host has been unreachable for patience. Host key failures are not
// retried.
func (p *pool) getRetry(ctx context.Context, patience time.Duration) (*conn, error) {
	giveUp := time.Now().Add(patience)
	wait := 100 * time.Millisecond
	for {
		c, err := p.get(ctx)
		if err == nil || errors.Is(err, ErrHostKey) || errors.Is(err, errClosed) || ctx.Err() != nil {
			return c, err
		}
		if time.Now().Add(wait).After(giveUp) {
			return nil, fmt.Errorf("%w: %s unreachable for %s: %w", backends.ErrUnavailable, p.b.cfg.Host, patience, err)
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(wait):
		}
		wait = min(wait*2, 5*time.Second)
	}
}

// broken drops c if it is still the current connection: the next get
// dials anew.
func (p *pool) broken(c *conn) {
	p.mu.Lock()
	if p.cur == c {
		p.cur = nil
	}
	p.mu.Unlock()
	c.close()
}

// watch notices a connection's end and sends keepalives while it lives:
// a connection whose keepalives go unanswered KeepaliveCountMax times in
// a row is closed, so a half-open link is found and re-dialled.
func (p *pool) watch(c *conn) {
	go func() {
		_ = c.client.Wait()
		p.broken(c)
		if m := p.b.cfg.Metrics; m != nil {
			p.mu.Lock()
			up := p.cur != nil
			p.mu.Unlock()
			if !up {
				m.SSHConnected.WithLabelValues(p.b.cfg.Profile).Set(0)
			}
		}
	}()
	interval, maxMisses := p.b.target.keepalive, p.b.target.keepaliveN
	t := time.NewTicker(interval)
	defer t.Stop()
	misses := 0
	for {
		select {
		case <-c.dead:
			return
		case <-t.C:
		}
		answered := make(chan error, 1)
		go func() {
			_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
			answered <- err
		}()
		select {
		case err := <-answered:
			if err != nil {
				p.broken(c)
				return
			}
			misses = 0
		case <-time.After(interval):
			if misses++; misses >= maxMisses {
				p.broken(c)
				return
			}
		case <-c.dead:
			return
		}
	}
}

func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	c := p.cur
	p.cur = nil
	p.mu.Unlock()
	if c != nil {
		c.close()
	}
}

// dial connects to the host through its jump hosts and opens the
// file-transfer session.
func (b *Backend) dial(ctx context.Context) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, b.target.connTimeout)
	defer cancel()
	var (
		hops []*ssh.Client
		prev *ssh.Client
	)
	fail := func(err error) (*conn, error) {
		for i := len(hops) - 1; i >= 0; i-- {
			_ = hops[i].Close()
		}
		return nil, err
	}
	for _, e := range append(slicesClone2(b.target.hops), b.target.host) {
		var (
			nc  net.Conn
			err error
		)
		if prev == nil {
			var d net.Dialer
			nc, err = d.DialContext(ctx, "tcp", e.addr())
		} else {
			nc, err = prev.DialContext(ctx, "tcp", e.addr())
		}
		if err != nil {
			return fail(fmt.Errorf("dial %s (%s): %w", e.alias, e.addr(), err))
		}
		cl, err := b.handshake(ctx, nc, e)
		if err != nil {
			_ = nc.Close()
			return fail(err)
		}
		hops = append(hops, cl)
		prev = cl
	}
	c := &conn{client: prev, hops: hops[:len(hops)-1], dead: make(chan struct{})}
	sc, err := sftp.NewClient(c.client)
	if err != nil {
		c.close()
		return nil, fmt.Errorf("%s: the sftp subsystem (needed to read job output): %w", b.target.host.alias, err)
	}
	c.sftp = sc
	return c, nil
}

// handshake runs the SSH handshake for e over nc, bounded by ctx.
func (b *Backend) handshake(ctx context.Context, nc net.Conn, e endpoint) (*ssh.Client, error) {
	auth, release, err := b.keys.authMethods(e)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.alias, err)
	}
	defer release()
	cfg := &ssh.ClientConfig{
		User:              e.user,
		Auth:              auth,
		HostKeyCallback:   b.hostKeys.callback(e.alias),
		HostKeyAlgorithms: b.hostKeys.algorithms(e.addr()),
		ClientVersion:     "SSH-2.0-sandrun",
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
	defer stop()
	sc, chans, reqs, err := ssh.NewClientConn(nc, e.addr(), cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s (%s): handshake: %w", e.alias, e.addr(), context.Cause(ctx))
		}
		if errors.Is(err, ErrHostKey) {
			return nil, fmt.Errorf("%w: %w", backends.ErrPermanent, err)
		}
		return nil, fmt.Errorf("%s (%s): %w", e.alias, e.addr(), err)
	}
	return ssh.NewClient(sc, chans, reqs), nil
}

// safeArgRE matches arguments passed unquoted in exec requests, which the
// remote login shell (sh, bash, zsh, csh) parses.
var safeArgRE = regexp.MustCompile(`^[A-Za-z0-9._/+=:@-]+$`)

// exec runs a POSIX sh script on c (`/bin/sh -s`, the script on standard
// input) in a new session, and returns its standard output. It holds one
// of the profile's MaxSessions slots meanwhile.
func (b *Backend) exec(ctx context.Context, c *conn, script string, args ...string) (string, error) {
	for _, a := range args {
		if !safeArgRE.MatchString(a) {
			return "", fmt.Errorf("ssh: unsafe remote argument %q", a)
		}
	}
	select {
	case b.pool.sem <- struct{}{}:
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
	defer func() { <-b.pool.sem }()
	if m := b.cfg.Metrics; m != nil {
		g := m.SSHSessionsInUse.WithLabelValues(b.cfg.Profile)
		g.Inc()
		defer g.Dec()
	}
	s, err := newSession(ctx, c)
	if err != nil {
		return "", fmt.Errorf("new session: %w", err)
	}
	defer func() { _ = s.Close() }()
	var stdout, stderr bytes.Buffer
	s.Stdin = strings.NewReader(script)
	s.Stdout, s.Stderr = &stdout, &stderr
	cmd := "/bin/sh -s"
	if len(args) > 0 {
		cmd += " " + strings.Join(args, " ")
	}
	if err := s.Start(cmd); err != nil {
		return "", fmt.Errorf("start remote sh: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = s.Close()
		return "", context.Cause(ctx)
	case <-c.dead:
		return "", errors.New("connection lost")
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 500 {
			msg = msg[:500] + "…"
		}
		return stdout.String(), fmt.Errorf("remote sh: %w: %s", err, msg)
	}
	return stdout.String(), nil
}

// newSession opens a session on c. A server at its MaxSessions refuses
// the channel; a slot freed by a session that just closed may not be free
// yet on its side, so a refusal is retried for a few seconds.
func newSession(ctx context.Context, c *conn) (*ssh.Session, error) {
	wait := 20 * time.Millisecond
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := c.client.NewSession()
		var refused *ssh.OpenChannelError
		if err == nil || !errors.As(err, &refused) || time.Now().After(deadline) {
			return s, err
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-c.dead:
			return nil, err
		case <-time.After(wait):
		}
		wait = min(wait*2, 500*time.Millisecond)
	}
}
