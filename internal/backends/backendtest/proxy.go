package backendtest

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy on 127.0.0.1 that a test can cut, to play a network
// that drops connections: an Options.CutLinks hook points the backend's
// connections at it. Its methods may be called from any goroutine.
type Proxy struct {
	// Addr is "127.0.0.1:PORT"; clients dial it instead of the target.
	Addr string
	// Port is the port the proxy listens on.
	Port int

	target string
	ln     net.Listener
	wg     sync.WaitGroup // the accept loop and every connection's goroutines

	mu       sync.Mutex
	closed   bool
	blocked  bool
	accepted int
	live     map[*proxied]struct{}
}

// proxied is one client connection and its connection to the target.
type proxied struct {
	client, target net.Conn
	once           sync.Once
	frozen         atomic.Bool // bytes are read and dropped: a link gone silent
}

// close closes both sides; it may be called more than once.
func (c *proxied) close() {
	c.once.Do(func() {
		_ = c.client.Close()
		_ = c.target.Close()
	})
}

// NewProxy starts a proxy to target ("host:port") and registers a cleanup
// that closes it.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("backendtest: proxy listen: %v", err)
	}
	p := &Proxy{
		Addr:   ln.Addr().String(),
		Port:   ln.Addr().(*net.TCPAddr).Port,
		target: target,
		ln:     ln,
		live:   map[*proxied]struct{}{},
	}
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.Close)
	return p
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue // a temporary error such as EMFILE; Close ends the loop
		}
		p.mu.Lock()
		p.accepted++
		refuse := p.blocked || p.closed
		if !refuse {
			p.wg.Add(1)
		}
		p.mu.Unlock()
		if refuse {
			_ = conn.Close()
			continue
		}
		go p.serve(conn)
	}
}

// serve connects client to the target and copies both ways until either
// side ends or the proxy cuts them.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	target, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	c := &proxied{client: client, target: target}
	p.mu.Lock()
	if p.blocked || p.closed { // cut while dialing
		p.mu.Unlock()
		c.close()
		return
	}
	p.live[c] = struct{}{}
	p.wg.Add(2)
	p.mu.Unlock()
	copyHalf := func(dst, src net.Conn) {
		defer p.wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 && !c.frozen.Load() {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		c.close()
		p.mu.Lock()
		delete(p.live, c)
		p.mu.Unlock()
	}
	go copyHalf(target, client)
	go copyHalf(client, target)
}

// Cut closes every live proxied connection now, both the client's and the
// target's side, and returns how many there were. New connections are
// still proxied.
func (p *Proxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.live)
	for c := range p.live {
		c.close()
		delete(p.live, c)
	}
	return n
}

// Freeze silences every live connection without closing it — bytes
// sent either way are dropped, as on a link that went dead without a
// reset — and returns how many there were. New connections are proxied
// normally.
func (p *Proxy) Freeze() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.live {
		c.frozen.Store(true)
	}
	return len(p.live)
}

// Block cuts the live connections and, until Unblock, closes every new
// connection as soon as it is accepted.
func (p *Proxy) Block() {
	p.mu.Lock()
	p.blocked = true
	p.mu.Unlock()
	p.Cut()
}

// Unblock lets new connections through again.
func (p *Proxy) Unblock() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = false
}

// Accepted returns how many connections the proxy has accepted, those
// closed at once while it was blocked included.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Close stops listening, so new connections are refused, cuts the live
// ones and waits for the proxy's goroutines to end. It may be called more
// than once; the cleanup registered by NewProxy calls it too.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_ = p.ln.Close()
	p.Cut()
	p.wg.Wait()
}
