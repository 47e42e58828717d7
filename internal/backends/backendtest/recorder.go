package backendtest

import (
	"bufio"
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is an io.Writer that keeps what a job writes and can signal
// the test when a marker shows up, so tests wait on the job's own word
// ("ready") rather than on sleeps. It is safe for concurrent use.
type recorder struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	marker  []byte
	seen    chan struct{} // Closed once marker has been written.
	changed chan struct{} // Closed, and replaced, at each write.
}

// newRecorder returns a recorder that watches for marker; "" watches for
// nothing.
func newRecorder(marker string) *recorder {
	r := &recorder{seen: make(chan struct{}), changed: make(chan struct{})}
	if marker != "" {
		r.marker = []byte(marker)
	}
	return r
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	from := max(0, r.buf.Len()-len(r.marker)+1) // A marker may straddle writes.
	r.buf.Write(p)
	if r.marker != nil && bytes.Contains(r.buf.Bytes()[from:], r.marker) {
		close(r.seen)
		r.marker = nil
	}
	close(r.changed)
	r.changed = make(chan struct{})
	return len(p), nil
}

// waitFor waits until what was written contains s, however it was split
// into writes. It fails the test if the job ends first or takes too long.
func (r *recorder) waitFor(t *testing.T, s string, stderr *recorder, done <-chan outcome) {
	t.Helper()
	timer := time.NewTimer(jobTimeout)
	defer timer.Stop()
	for {
		r.mu.Lock()
		found, changed := bytes.Contains(r.buf.Bytes(), []byte(s)), r.changed
		r.mu.Unlock()
		if found {
			return
		}
		select {
		case <-changed:
		case o := <-done:
			t.Fatalf("job ended before it wrote %q: exit %d, err %v\nstdout: %q\nstderr: %q",
				s, o.res.ExitCode, o.err, r, stderr)
		case <-timer.C:
			t.Fatalf("job did not write %q within %s\nstdout: %q\nstderr: %q", s, jobTimeout, r, stderr)
		}
	}
}

// Bytes returns a copy of everything written so far.
func (r *recorder) Bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.buf.Bytes())
}

func (r *recorder) String() string { return string(r.Bytes()) }

// pids returns the numbers on lines of the form "pid N", in order.
func (r *recorder) pids(t *testing.T) []int {
	t.Helper()
	var pids []int
	sc := bufio.NewScanner(bytes.NewReader(r.Bytes()))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "pid ")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(rest))
		if err != nil || pid <= 1 {
			t.Fatalf("job printed a bad pid line %q", sc.Text())
		}
		pids = append(pids, pid)
	}
	return pids
}

// counter is an io.Writer that counts bytes and the bytes that are not
// zero. It is read only after Run has returned.
type counter struct {
	n, nonZero int64
}

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	for _, b := range p {
		if b != 0 {
			c.nonZero++
		}
	}
	return len(p), nil
}

// waitReady waits until the job has written the marker stdout watches
// for. It fails the test if the job ends first or takes too long.
func waitReady(t *testing.T, stdout, stderr *recorder, done <-chan outcome) {
	t.Helper()
	timer := time.NewTimer(jobTimeout)
	defer timer.Stop()
	select {
	case <-stdout.seen:
	case o := <-done:
		t.Fatalf("job ended before it was ready: exit %d, err %v\nstdout: %q\nstderr: %q",
			o.res.ExitCode, o.err, stdout, stderr)
	case <-timer.C:
		t.Fatalf("job not ready after %s\nstdout: %q\nstderr: %q", jobTimeout, stdout, stderr)
	}
}

// awaitReturn waits for Run to return, at most until deadline. Failing
// past it is the point: Run must return within the contract's bound.
func awaitReturn(t *testing.T, done <-chan outcome, deadline time.Time) outcome {
	t.Helper()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case o := <-done:
		return o
	case <-timer.C:
		t.Fatalf("Run did not return by its deadline; where the backend's goroutines are:\n%s", backendStacks())
		return outcome{}
	}
}

// backendStacks is the stacks of the goroutines running a backend's code,
// for a test that found Run stuck: they say which engine call or wait it
// is in.
func backendStacks() string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var b strings.Builder
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "/internal/backends/") && !strings.Contains(g, "backendtest.awaitReturn") {
			b.WriteString(g)
			b.WriteString("\n\n")
		}
	}
	return b.String()
}
