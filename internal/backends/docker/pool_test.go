package docker

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/docker/dockertest"
)

// recordingEngine is the engine, noting the names pooled containers take
// and each container as it was right after its start or, for a pooled
// one (started ahead), its claim.
type recordingEngine struct {
	engine
	mu      sync.Mutex
	renamed []string
	started []container.InspectResponse
	claimed []container.InspectResponse
}

func (r *recordingEngine) ContainerRename(ctx context.Context, id string, o client.ContainerRenameOptions) (client.ContainerRenameResult, error) {
	res, err := r.engine.ContainerRename(ctx, id, o)
	if err == nil {
		info, ierr := r.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		r.mu.Lock()
		r.renamed = append(r.renamed, o.NewName)
		if ierr == nil {
			r.claimed = append(r.claimed, info.Container)
		}
		r.mu.Unlock()
	}
	return res, err
}

func (r *recordingEngine) ContainerStart(ctx context.Context, id string, o client.ContainerStartOptions) (client.ContainerStartResult, error) {
	res, err := r.engine.ContainerStart(ctx, id, o)
	if info, ierr := r.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); ierr == nil {
		r.mu.Lock()
		r.started = append(r.started, info.Container)
		r.mu.Unlock()
	}
	return res, err
}

func (r *recordingEngine) claims() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.renamed...)
}

func (r *recordingEngine) lastStarted(t *testing.T) container.InspectResponse {
	t.Helper()
	return r.last(t, &r.started, "started")
}

// lastClaimed is the last pooled container a job claimed, as it was then.
func (r *recordingEngine) lastClaimed(t *testing.T) container.InspectResponse {
	t.Helper()
	return r.last(t, &r.claimed, "claimed")
}

func (r *recordingEngine) last(t *testing.T, list *[]container.InspectResponse, what string) container.InspectResponse {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(*list) == 0 {
		t.Fatalf("no container %s", what)
	}
	return (*list)[len(*list)-1]
}

// newPoolBackend is a backend of the test image with cfg's settings,
// its engine recorded.
func newPoolBackend(t *testing.T, cfg Config) (*Docker, *recordingEngine) {
	t.Helper()
	cfg.Image = dockertest.Image(t, dockertest.Engine(t))
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	rec := &recordingEngine{engine: d.api}
	d.api = rec
	return d, rec
}

// warm waits for the pool of spec's deployment and worker to be full.
func warm(t *testing.T, d *Docker, spec backends.Spec) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := d.WarmPool(ctx, spec.Deployment, spec.Worker); err != nil {
		t.Fatalf("WarmPool: %v", err)
	}
}

// probeCommand prints what a job can learn of its container: user,
// capabilities, mounts, network, limits, environment, directory,
// stdin, rlimits, its own command line and the writable layer.
const probeCommand = `id; grep -E '^Cap' /proc/self/status
echo --- mounts; cat /proc/self/mountinfo
echo --- net; ls /sys/class/net; cut -d: -f1 /proc/net/dev
echo --- limits
for f in memory.max memory.swap.max pids.max cpu.max memory/memory.limit_in_bytes memory/memory.memsw.limit_in_bytes \
  pids/pids.max cpu/cpu.cfs_quota_us cpu/cpu.cfs_period_us; do [ -r /sys/fs/cgroup/$f ] && echo "$f $(cat /sys/fs/cgroup/$f)"; done
echo --- env; env
echo --- misc; pwd; echo "$PWD"; umask; ulimit -a; stat -c %A /proc/self/fd/0; wc -c; tr '\0' ' ' < /proc/$$/cmdline; echo
ls -la / /tmp /work | awk '{print $1, $3, $4, $NF}'; df -k /tmp /dev/shm | tr -s ' ' | cut -d' ' -f2,6`

// containerIDs are what differ between any two containers: IDs, mount
// and device numbers, hostnames.
var containerIDs = regexp.MustCompile(`[0-9a-f]{12,64}|[A-Z0-9]{26}`)

var peerGroup = regexp.MustCompile(`\b(master|shared|propagate_from):[0-9]+`)

// normalize blanks out, in a probe's output, what differs between any
// two containers.
func normalize(out, hostname string) string {
	var lines []string
	section := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "--- ") {
			section = l
		}
		switch {
		case section == "--- mounts" && l != section:
			// mount ID, parent ID, major:minor, peer groups: per mount
			if f := strings.Fields(l); len(f) > 3 {
				l = peerGroup.ReplaceAllString(strings.Join(f[3:], " "), "$1:N")
			}
		case strings.HasPrefix(l, "HOSTNAME="):
			l = "HOSTNAME=(the container's)"
		}
		if hostname != "" {
			l = strings.ReplaceAll(l, hostname, "HOST")
		}
		lines = append(lines, containerIDs.ReplaceAllString(l, "ID"))
	}
	return strings.Join(lines, "\n")
}

// TestPoolIndistinguishable: the same probe job, run in a fresh container
// (warm_pool 0) and in a pooled one (warm_pool 1), sees the same user,
// capabilities, mounts, network, cgroup limits, environment (but for
// HOSTNAME's value), directory, stdin and rlimits; the engine reports the
// same host configuration and labels (but for the job and attempt, which
// the pooled container's name holds). A directory docker must create
// gets the fresh container's treatment too.
func TestPoolIndistinguishable(t *testing.T) {
	t.Parallel()
	cfg := Config{Pull: PullNever, MemoryBytes: 96 << 20, NanoCPUs: 5e8, PidsLimit: 77, Profile: "probe"}
	fresh, freshRec := newPoolBackend(t, cfg)
	cfg.WarmPool = 1
	pooled, poolRec := newPoolBackend(t, cfg)
	spec := backends.Spec{JobID: "probe-1", Attempt: 2, Worker: "w-probe", Deployment: "d-probe", Dir: "/work",
		Command: probeCommand, Env: map[string]string{"SANDRUN_A": "a b", "SANDRUN_Q": `it's "q" \n`, "HOME": "/work"}}
	run := func(d *Docker, spec backends.Spec) string {
		t.Helper()
		out, r, err := runOut(t, d, spec)
		if err != nil || r.ExitCode != 0 {
			t.Fatalf("probe: exit %d err %v\n%s", r.ExitCode, err, out)
		}
		return out
	}
	warm(t, pooled, spec)
	gotFresh := run(fresh, spec)
	freshInfo := freshRec.lastStarted(t)
	gotPooled := run(pooled, spec)
	pooledInfo := poolRec.lastClaimed(t)
	if pooledInfo.State == nil || !pooledInfo.State.Running {
		t.Fatalf("the claimed container was not running (started ahead): %+v", pooledInfo.State)
	}
	if claims := poolRec.claims(); len(claims) != 1 || claims[0] != claimName(spec, pooledInfo.ID) {
		t.Fatalf("the pooled backend's claims: %q; want one, named for the job and attempt", claims)
	}
	if a, b := normalize(gotFresh, freshInfo.Config.Hostname), normalize(gotPooled, pooledInfo.Config.Hostname); a != b {
		t.Errorf("the probe tells a pooled container from a fresh one:\n--- fresh\n%s\n--- pooled\n%s", a, b)
	}
	if !strings.Contains(gotPooled, "uid=65534") || !strings.Contains(gotPooled, "SANDRUN_Q=it's \"q\" \\n") {
		t.Errorf("probe output lacks the user or the environment:\n%s", gotPooled)
	}

	// The engine's view: the same host configuration, the same labels
	// but for those fixed at create.
	if !reflect.DeepEqual(freshInfo.HostConfig, pooledInfo.HostConfig) {
		t.Errorf("host configurations differ:\nfresh  %+v\npooled %+v", *freshInfo.HostConfig, *pooledInfo.HostConfig)
	}
	freshLabels, pooledLabels := maps.Clone(freshInfo.Config.Labels), maps.Clone(pooledInfo.Config.Labels)
	if freshLabels[LabelJob] != "probe-1" || freshLabels[LabelAttempt] != "2" || pooledLabels[LabelPool] != "true" {
		t.Fatalf("labels: fresh %v pooled %v", freshLabels, pooledLabels)
	}
	delete(freshLabels, LabelJob)
	delete(freshLabels, LabelAttempt)
	delete(pooledLabels, LabelPool)
	delete(pooledLabels, LabelProfile)
	if !maps.Equal(freshLabels, pooledLabels) {
		t.Errorf("labels differ beyond job, attempt and pool: fresh %v, pooled %v", freshLabels, pooledLabels)
	}
	job, attempt, worker, idle := attemptOf(container.Summary{Labels: pooledInfo.Config.Labels, Names: []string{pooledInfo.Name}})
	if job != "probe-1" || attempt != 2 || worker != "w-probe" || idle {
		t.Errorf("the pooled container reads as job %q attempt %d worker %q idle %v", job, attempt, worker, idle)
	}

	// A directory the image lacks: docker makes it for a fresh container;
	// the wrapper cannot, and hands the job to a fresh container.
	warm(t, pooled, spec)
	spec.JobID, spec.Dir, spec.Command = "probe-2", "/work/made/here", "pwd; ls -ld . | cut -d' ' -f1,3,4; id -u"
	gotFresh, gotPooled = run(fresh, spec), run(pooled, spec)
	if gotFresh != gotPooled || !strings.HasPrefix(gotFresh, "/work/made/here\n") {
		t.Errorf("a directory docker makes: fresh %q, pooled %q", gotFresh, gotPooled)
	}
	if claims := poolRec.claims(); len(claims) != 2 {
		t.Errorf("claims %q: the second job should have claimed a pooled container first", claims)
	}
}

// TestPoolNeverReused: two jobs in a row on a pool of one run in two
// containers; what the first wrote in its writable layer is not there
// for the second, and both are gone after their jobs.
func TestPoolNeverReused(t *testing.T) {
	t.Parallel()
	d, rec := newPoolBackend(t, Config{Pull: PullNever, WarmPool: 1, User: "0:0"})
	spec := backends.Spec{JobID: "reuse-1", Attempt: 1, Deployment: "d-reuse", Worker: "w-reuse",
		Command: "hostname; ls /work/mark 2>/dev/null || echo absent; echo x > /work/mark"}
	warm(t, d, spec)
	first, _, err := runOut(t, d, spec)
	if err != nil {
		t.Fatal(err)
	}
	warm(t, d, spec)
	spec.JobID = "reuse-2"
	second, _, err := runOut(t, d, spec)
	if err != nil {
		t.Fatal(err)
	}
	claims := rec.claims()
	if len(claims) != 2 || claims[0] == claims[1] {
		t.Fatalf("claims %q: want two, of two containers", claims)
	}
	h1, _, _ := strings.Cut(first, "\n")
	h2, _, _ := strings.Cut(second, "\n")
	if h1 == h2 || !strings.HasSuffix(first, "absent\n") || !strings.HasSuffix(second, "absent\n") {
		t.Fatalf("first job %q, second %q: want two hostnames, and no mark left for the second", first, second)
	}
	warm(t, d, spec) // waits for the removals
	for _, name := range claims {
		if _, err := rec.ContainerInspect(t.Context(), name, client.ContainerInspectOptions{}); !isNotFound(err) {
			t.Errorf("container %s after its job: %v; want it removed", name, err)
		}
	}
}

// TestPoolIdleContainerStopped: a pooled container waits started; one
// that stopped while idle (an engine restart, a kill) is not claimed into
// a wait for output that never comes: the job runs in a fresh container.
func TestPoolIdleContainerStopped(t *testing.T) {
	t.Parallel()
	d, rec := newPoolBackend(t, Config{Pull: PullNever, WarmPool: 1})
	spec := backends.Spec{JobID: "stopped-1", Attempt: 1, Deployment: "d-stopped", Worker: "w-stopped", Command: "echo ran; exit 3"}
	warm(t, d, spec)
	d.pools.mu.Lock()
	idle := d.pools.m[poolKey{spec.Deployment, spec.Worker}].idle
	d.pools.mu.Unlock()
	if len(idle) != 1 {
		t.Fatalf("idle containers %d, want 1", len(idle))
	}
	info, err := rec.ContainerInspect(t.Context(), idle[0].id, client.ContainerInspectOptions{})
	if err != nil || info.Container.State == nil || !info.Container.State.Running {
		t.Fatalf("idle pooled container: %+v %v; want it running (started ahead)", info.Container.State, err)
	}
	if _, err := rec.ContainerKill(t.Context(), idle[0].id, client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	w := rec.ContainerWait(wctx, idle[0].id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-w.Result:
	case err := <-w.Error:
		t.Fatal(err)
	}
	out, res, err := runOut(t, d, spec)
	if err != nil || res.ExitCode != 3 || out != "ran\n" {
		t.Fatalf("job after its pooled container stopped: out %q exit %d err %v; want the job's own outcome from a fresh container", out, res.ExitCode, err)
	}
	if claims := rec.claims(); len(claims) != 1 {
		t.Fatalf("claims %q: want the stopped container claimed once, then passed over", claims)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	fresh := 0
	for _, c := range rec.started {
		if c.Config.Labels[LabelJob] == spec.JobID && c.Config.Labels[LabelPool] == "" {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("fresh containers started for the job: %d, want 1", fresh)
	}
}

// TestPoolOnlyForPlainJobs: a job naming its own image, asking for
// container options, a session, a workspace or a relative directory, or
// setting a variable the wrapper's shell owns, never gets a pooled
// container.
func TestPoolOnlyForPlainJobs(t *testing.T) {
	t.Parallel()
	d, _ := newPoolBackend(t, Config{Pull: PullNever, WarmPool: 1, AllowedImages: []string{"sandrun-test/*"}})
	plain := backends.Spec{JobID: "plain", Attempt: 1, Deployment: "d-plain", Command: "true"}
	warm(t, d, plain)
	for name, mod := range map[string]func(*backends.Spec){
		"own image":    func(s *backends.Spec) { s.Container = &backends.ContainerOptions{Image: "sandrun-test/other:1"} },
		"cap_add":      func(s *backends.Spec) { s.Container = &backends.ContainerOptions{CapAdd: []string{"CHOWN"}} },
		"mounts":       func(s *backends.Spec) { s.Container = &backends.ContainerOptions{Mounts: []string{"v:/v"}} },
		"session":      func(s *backends.Spec) { s.Session = "k" },
		"workspace":    func(s *backends.Spec) { s.Workspace = "w" },
		"relative dir": func(s *backends.Spec) { s.Dir = "sub" },
		"SHLVL":        func(s *backends.Spec) { s.Env = map[string]string{"SHLVL": "3"} },
		"not a name":   func(s *backends.Spec) { s.Env = map[string]string{"A-B": "1"} },
		"a NUL":        func(s *backends.Spec) { s.Command = "echo \x00" },
		"huge payload": func(s *backends.Spec) { s.Command = strings.Repeat("x", maxPayload) },
	} {
		spec := plain
		mod(&spec)
		cfg, host, err := d.containerConfig(spec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c, ok := d.claim(t.Context(), spec, cfg, host); ok {
			d.discard(t.Context(), c)
			t.Errorf("a job with %s claimed a pooled container", name)
		}
	}
	cfg, host, _ := d.containerConfig(plain)
	c, ok := d.claim(t.Context(), plain, cfg, host)
	if !ok {
		t.Fatal("a plain job found the full pool empty")
	}
	d.discard(t.Context(), c)

	for _, bad := range []Config{{Image: "x", WarmPool: -1}, {Image: "x", WarmPool: MaxWarmPool + 1}, {Image: "x", WarmPool: 1, Pull: PullAlways}} {
		if _, err := New(bad); err == nil || !strings.HasPrefix(err.Error(), "warm_pool:") {
			t.Errorf("New(%+v): %v, want an error naming warm_pool", bad, err)
		}
	}
}

// readyWriter signals once "ready" was written.
type readyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan struct{}
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.buf.String(), "ready")
	w.buf.Write(p)
	if !had && strings.Contains(w.buf.String(), "ready") {
		close(w.ready)
	}
	return len(p), nil
}

// TestPoolRefillsAndReaps: the pool refills while its claimed container
// runs a job; the backend's own reaper leaves its idle pool alone; the
// next worker's reaper lists and removes the dead worker's claimed
// container (its job and attempt read from the name) and its idle ones;
// a claim of a container reaped meanwhile falls back to a fresh one; and
// Close removes the idle pool.
func TestPoolRefillsAndReaps(t *testing.T) {
	t.Parallel()
	deployment := fmt.Sprintf("d-reap-%d", time.Now().UnixNano())
	d, _ := newPoolBackend(t, Config{Pull: PullNever, WarmPool: 2, Profile: "reap"})
	spec := backends.Spec{JobID: "pooled-orphan", Attempt: 3, Worker: "w-dead", Deployment: deployment,
		Command: "echo ready; exec sleep 120", KillGrace: time.Second}
	list := func() (idle, claimed []container.Summary) {
		t.Helper()
		l, err := dockertest.Engine(t).ContainerList(t.Context(), client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", LabelDeploy+"="+deployment)})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range l.Items {
			if _, _, _, isIdle := attemptOf(c); isIdle {
				idle = append(idle, c)
			} else {
				claimed = append(claimed, c)
			}
		}
		return idle, claimed
	}
	warm(t, d, spec)
	if idle, claimed := list(); len(idle) != 2 || len(claimed) != 0 {
		t.Fatalf("after WarmPool: %d idle, %d claimed; want 2, 0", len(idle), len(claimed))
	}
	if n, err := d.ReapOrphans(t.Context(), deployment, func(string, int, string) bool { return false }); err != nil || n != 0 {
		t.Fatalf("the pool's own backend reaped %d (%v); its idle pool is its own", n, err)
	}

	stdout := &readyWriter{ready: make(chan struct{})}
	type outcome struct {
		res backends.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := d.Run(t.Context(), spec, backends.Output{Stdout: stdout, Stderr: stdout})
		done <- outcome{res, err}
	}()
	select {
	case <-stdout.ready:
	case o := <-done:
		t.Fatalf("the job ended early: %+v %v", o.res, o.err)
	case <-time.After(time.Minute):
		t.Fatal("the job never said ready")
	}
	// The refill, while the job runs; WarmPool returns once it is done
	// (a reaper racing a create in flight would miss that container).
	warm(t, d, spec)
	idle, claimed := list()
	if len(idle) != 2 || len(claimed) != 1 {
		t.Fatalf("while its job runs, the pool holds %d idle and %d claimed containers; want 2 refilled, 1 claimed", len(idle), len(claimed))
	}
	if job, attempt, worker, _ := attemptOf(claimed[0]); job != spec.JobID || attempt != spec.Attempt || worker != spec.Worker {
		t.Fatalf("the claimed container reads as job %q attempt %d worker %q", job, attempt, worker)
	}

	next, err := New(Config{Image: d.cfg.Image, Pull: PullNever, WarmPool: 2, Profile: "reap"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = next.Close() })
	deadWorker := func(_ string, _ int, worker string) bool { return worker != spec.Worker }
	if o, err := next.Orphans(t.Context(), deployment, func(string, int, string) bool { return true }); err != nil || len(o) != 0 {
		t.Fatalf("Orphans with every attempt and worker live: %q %v", o, err)
	}
	o, err := next.Orphans(t.Context(), deployment, deadWorker)
	if err != nil || len(o) != 3 || !strings.Contains(strings.Join(o, "\n"), "job pooled-orphan attempt 3 worker w-dead") {
		t.Fatalf("Orphans with the worker dead: %q %v; want its claimed container (by job and attempt) and 2 idle ones", o, err)
	}
	if n, err := next.ReapOrphans(t.Context(), deployment, deadWorker); err != nil || n != 3 {
		t.Fatalf("the next worker reaped %d (%v); want the claimed container and 2 idle ones", n, err)
	}
	select {
	case o := <-done:
		if o.err == nil && o.res.ExitCode == 0 {
			t.Fatalf("the reaped job's Run: %+v, want it stopped", o.res)
		}
	case <-time.After(time.Minute):
		t.Fatal("the reaped job's Run did not return")
	}
	if idle, claimed := list(); len(idle)+len(claimed) != 0 {
		t.Fatalf("after reaping: %d idle, %d claimed remain", len(idle), len(claimed))
	}

	// d still counts the reaped containers as its pool: a claim finds one
	// gone and the job runs in a fresh container.
	spec.Command = "echo fine"
	if out, r, err := runOut(t, d, spec); err != nil || r.ExitCode != 0 || out != "fine\n" {
		t.Fatalf("a job after its pool was reaped: %q exit %d err %v", out, r.ExitCode, err)
	}
	warm(t, d, spec)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if idle, claimed := list(); len(idle)+len(claimed) != 0 {
		t.Fatalf("after Close: %d idle, %d claimed remain", len(idle), len(claimed))
	}
}

// TestConformanceWarmPool: the conformance suite with a warm pool, filled
// before each sub-test for the deployment and worker its jobs name.
func TestConformanceWarmPool(t *testing.T) {
	var claims atomic.Int64
	pooled := func(t *testing.T, memBytes int64) *Docker {
		d, rec := newPoolBackend(t, Config{Pull: PullNever, WarmPool: 2, MemoryBytes: memBytes})
		warm(t, d, backends.Spec{})
		t.Cleanup(func() { claims.Add(int64(len(rec.claims()))) })
		return d
	}
	// After every sub-test (parallel ones run after this function).
	t.Cleanup(func() {
		t.Logf("%d jobs ran in pooled containers", claims.Load())
		if !t.Failed() && claims.Load() < 15 {
			t.Errorf("only %d jobs of the suite ran in pooled containers", claims.Load())
		}
	})
	backendtest.Run(t, func(t *testing.T) backends.Backend { return pooled(t, 0) }, backendtest.Options{
		TempDir:    func(*testing.T) string { return "/work" },
		StopMargin: 15 * time.Second,
		Limited: func(t *testing.T) (backends.Backend, int64, string) {
			return pooled(t, testMemoryLimit), testMemoryLimit, ""
		},
		HostAccess: hostBindSpec,
	})
}

// TestPayloadAsAFreshShell: on the host's shells (dash, bash, busybox's
// sh, as images have them), a job run by the wrapper from its payload
// sees what the same job run as `sh -c` in its directory sees:
// environment, directory, SHLVL — with the image's SHLVL unset or set.
func TestPayloadAsAFreshShell(t *testing.T) {
	t.Parallel()
	probe := `env | LC_ALL=C sort; pwd; echo "pwd=$PWD old=${OLDPWD-unset} lvl=${SHLVL-unset}"; sh -c 'echo "child lvl=${SHLVL-unset}"'; wc -c`
	spec := backends.Spec{Dir: "/tmp", Command: probe, Env: map[string]string{"SANDRUN_A": "a b", "SANDRUN_Q": `it's "$HOME" \n`, "HOME": "/tmp"}}
	for _, shell := range [][]string{{"/bin/dash"}, {"/bin/bash"}, {"/bin/busybox", "sh"}} {
		if _, err := os.Stat(shell[0]); err != nil {
			t.Logf("%s: %v", shell[0], err)
			continue
		}
		for _, image := range [][]string{{"PATH=/usr/bin:/bin", "HOSTNAME=h"}, {"PATH=/usr/bin:/bin", "HOSTNAME=h", "SHLVL=4", "OLDPWD=/var"}} {
			sh := func(args ...string) *exec.Cmd {
				return exec.Command(shell[0], append(shell[1:], args...)...)
			}
			// Fresh: the container's environment with the job's over it,
			// started in the job's directory.
			fresh := sh("-c", spec.Command)
			fresh.Dir = spec.Dir
			fresh.Env = append(slices.Clone(image), "HOME=/tmp", "SANDRUN_A=a b", `SANDRUN_Q=it's "$HOME" \n`)
			want, err := fresh.Output()
			if err != nil {
				t.Fatalf("%v fresh: %v", shell, err)
			}
			// Pooled: the container's environment, the image's directory,
			// the payload on stdin; its /bin/sh is this shell.
			p := payload(spec, imageShellLevel(image))
			p = strings.Replace(p, "exec /bin/sh -c", "exec "+strings.Join(shell, " ")+" -c", 1)
			pooled := sh("-c", wrapperScript)
			pooled.Dir = "/"
			pooled.Env = image
			pooled.Stdin = strings.NewReader(p)
			got, err := pooled.Output()
			if err != nil {
				t.Fatalf("%v pooled: %v", shell, err)
			}
			if len(got) == 0 || got[0] != ack {
				t.Fatalf("%v: the wrapper's output %q does not start with the ack byte", shell, got)
			}
			if string(got[1:]) != string(want) {
				t.Errorf("%v, image env %q:\n--- fresh\n%s--- pooled\n%s", shell, image, want, got[1:])
			}
		}
	}
	// A directory that cannot be entered: no ack, nothing run.
	spec.Dir, spec.Command = "/nonexistent/dir", "echo ran"
	w := exec.Command("/bin/sh", "-c", wrapperScript)
	w.Stdin = strings.NewReader(payload(spec, shellLevel{}))
	if out, err := w.Output(); err != nil || len(out) != 0 {
		t.Errorf("a directory that cannot be entered: %q %v; want no output, not even the ack", out, err)
	}
}

// TestClaimNameRoundTrip: the job and attempt a claim writes into a
// container's name read back whatever the job ID holds, and names that
// are not claims read as idle.
func TestClaimNameRoundTrip(t *testing.T) {
	t.Parallel()
	id := "0123456789abcdef0123456789abcdef"
	for _, job := range []string{"", "j", "batch_1-x.42", "a.b_c", "ünï côde/../x", strings.Repeat("z", 128)} {
		spec := backends.Spec{JobID: job, Attempt: 7}
		name := claimName(spec, id)
		if !regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`).MatchString(name) {
			t.Errorf("claimName(%q) = %q: not a container name", job, name)
		}
		c := container.Summary{Names: []string{"/" + name}, Labels: map[string]string{LabelPool: "true", LabelWorker: "w"}}
		if j, a, w, idle := attemptOf(c); j != job || a != 7 || w != "w" || idle {
			t.Errorf("claimName(%q) = %q reads back as job %q attempt %d worker %q idle %v", job, name, j, a, w, idle)
		}
	}
	for _, name := range []string{"/eager_turing", "/sandrun-claim.x.y", "/sandrun-claim.1.bad_zz.abc"} {
		c := container.Summary{Names: []string{name}, Labels: map[string]string{LabelPool: "true"}}
		if _, _, _, idle := attemptOf(c); !idle {
			t.Errorf("%s reads as a claimed container", name)
		}
	}
}
