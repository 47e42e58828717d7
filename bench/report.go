package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// result is one system's figures, or the error that stopped it.
type result struct {
	System     string
	Throughput phaseStats // raw: the spawn run
	Latency    phaseStats // the paced phase (not for raw)
	HasLatency bool
	Err        error
}

// rate is the throughput phase's jobs per second.
func (r result) rate() float64 {
	if r.Err != nil || r.Throughput.Elapsed <= 0 {
		return 0
	}
	return float64(r.Throughput.Jobs) / r.Throughput.Elapsed.Seconds()
}

// enqueueRate is the throughput phase's enqueues per second.
func (r result) enqueueRate() float64 {
	if r.Err != nil || r.Throughput.Enqueued <= 0 {
		return 0
	}
	return float64(r.Throughput.Jobs) / r.Throughput.Enqueued.Seconds()
}

// report is a run's Markdown report.
type report struct {
	cfg     config
	when    time.Time
	load    string // load average at the start
	mu      sync.Mutex
	version map[string]string // services' versions, found as they start
	results []result
}

func newReport(cfg config) *report {
	return &report{cfg: cfg, when: time.Now().UTC(), load: loadAverage(), version: map[string]string{}}
}

func (r *report) setVersion(what, v string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.version[what] = v
}

func (r *report) add(res result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, res)
}

// get returns system's result.
func (r *report) get(system string) (result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, res := range r.results {
		if res.System == system {
			return res, true
		}
	}
	return result{}, false
}

// labels are the systems' names in the report.
var labels = map[string]string{
	"raw":             "raw spawn (os/exec, no queue)",
	"sandrun":         "sandrun, 1 node (R1)",
	"sandrun-secure":  "sandrun, 1 node, auth + encryption + a masked secret per job",
	"sandrun-cluster": "sandrun, 3-node cluster (R3)",
	"asynq":           "asynq + redis",
	"river":           "River + PostgreSQL",
}

func (r *report) write(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.cfg
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("## sandrun, asynq and River: `sh -c true` jobs, %s\n\n", r.when.Format("2006-01-02 15:04 MST"))
	p("Machine: %d CPUs, %s memory, Linux %s, %s %s/%s; load average at start %s.\n\n",
		runtime.NumCPU(), memTotal(), kernel(), runtime.Version(), runtime.GOOS, runtime.GOARCH, r.load)
	p("Versions: %s.\n\n", strings.Join(r.versions(), "; "))
	p("Workload: `-jobs %d -concurrency %d -enqueuers %d -latency-jobs %d -latency-interval %s`: %d jobs enqueued by %d goroutines, run %d at once; then %d jobs paced one every %s for the latency figures. Each system first runs %d warm-up jobs.\n\n",
		c.Jobs, c.Concurrency, c.Enqueuers, c.LatencyJobs, c.LatencyInterval, c.Jobs, c.Enqueuers, c.Concurrency, c.LatencyJobs, c.LatencyInterval, warmUpJobs)

	raw, haveRaw := r.find("raw")
	p("| system | jobs | enqueue/s | jobs/s | × raw | p50 | p99 | p50 under backlog | p99 under backlog |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, res := range r.results {
		label := labels[res.System]
		if res.Err != nil {
			p("| %s | error: %s | | | | | | | |\n", label, cell(res.Err.Error()))
			continue
		}
		ofRaw := "—"
		if haveRaw && raw.rate() > 0 {
			ofRaw = fmt.Sprintf("%.2f", res.rate()/raw.rate())
		}
		if !res.HasLatency {
			p("| %s | %d | — | %.0f | %s | — | — | — | — |\n", label, res.Throughput.Jobs, res.rate(), ofRaw)
			continue
		}
		p("| %s | %d | %.0f | %.0f | %s | %s | %s | %s | %s |\n", label, res.Throughput.Jobs, res.enqueueRate(), res.rate(), ofRaw,
			ms(res.Latency.P50), ms(res.Latency.P99), ms(res.Throughput.P50), ms(res.Throughput.P99))
	}
	p("\njobs/s: jobs over the time from the first enqueue to the end of the last job. p50/p99: enqueue→start of the command in ms, in the paced phase; \"under backlog\": the same in the throughput phase, mostly time spent queued.\n")
	r.writeRatios(w)
	r.writeNotes(w)
}

// versions names the software of each system that was run.
func (r *report) versions() []string {
	var v []string
	if r.cfg.runs("sandrun", "sandrun-secure", "sandrun-cluster") {
		v = append(v, "sandrun (this tree) with nats-server "+orUnknown(r.version["nats-server"]))
	}
	if r.cfg.runs("asynq") {
		v = append(v, fmt.Sprintf("asynq %s (go-redis %s) on redis-server %s", modVersion("github.com/hibiken/asynq"),
			modVersion("github.com/redis/go-redis/v9"), orUnknown(r.version["redis-server"])))
	}
	if r.cfg.runs("river") {
		v = append(v, fmt.Sprintf("River %s (pgx %s) on PostgreSQL %s", modVersion("github.com/riverqueue/river"),
			modVersion("github.com/jackc/pgx/v5"), orUnknown(r.version["postgres"])))
	}
	if len(v) == 0 {
		v = append(v, "none beyond the Go toolchain")
	}
	return v
}

// find is get without the lock (write holds it).
func (r *report) find(system string) (result, bool) {
	for _, res := range r.results {
		if res.System == system && res.Err == nil {
			return res, true
		}
	}
	return result{}, false
}

func (r *report) writeRatios(w io.Writer) {
	sr, ok := r.find("sandrun")
	if !ok {
		return
	}
	var rows []string
	if sec, ok := r.find("sandrun-secure"); ok && sr.rate() > 0 && sr.Latency.P99 > 0 {
		rows = append(rows, fmt.Sprintf("| %s / sandrun R1 | %.3g | %.3g |", labels["sandrun-secure"],
			sec.rate()/sr.rate(), float64(sec.Latency.P99)/float64(sr.Latency.P99)))
	}
	for _, other := range []string{"asynq", "river"} {
		o, ok := r.find(other)
		if !ok || o.rate() == 0 || o.Latency.P99 == 0 {
			continue
		}
		rows = append(rows, fmt.Sprintf("| sandrun R1 / %s | %.3g | %.3g |", labels[other],
			sr.rate()/o.rate(), float64(sr.Latency.P99)/float64(o.Latency.P99)))
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n| ratio | jobs/s | p99 enqueue→start |\n|---|---:|---:|\n%s\n", strings.Join(rows, "\n"))
	fmt.Fprintf(w, "\nA jobs/s ratio above 1: sandrun processes more; a p99 ratio below 1: sandrun starts jobs sooner.\n")
}

func (r *report) writeNotes(w io.Writer) {
	c := r.cfg
	storage := "NATS's default sync (JetStream flushes to disk every 2 minutes)"
	if c.SyncAlways {
		storage = "--sync-always (fsync on every write)"
	}
	redis := "no persistence (`--save '' --appendonly no`)"
	if c.RedisAOF {
		redis = "append-only file with `appendfsync everysec`"
	}
	fmt.Fprintf(w, "\nSettings and persistence (not alike; see the package comment):\n\n")
	if c.runs("sandrun", "sandrun-secure", "sandrun-cluster") {
		fmt.Fprintf(w, "- sandrun: `sandrun server` nodes with JetStream file storage and %s; one `sandrun worker --slots %d` process, local backend; the cluster's layout at replicas 3. `sandrun` and `sandrun-cluster` run with `--no-auth`; `sandrun-secure` runs as shipped (credentials per role, store encrypted at rest) and every job carries a secret variable, sealed by the client, opened by the worker and masked in output.\n", storage, c.Concurrency)
	}
	if c.runs("asynq") {
		fmt.Fprintf(w, "- asynq: redis-server with %s; `Concurrency: %d`, TaskCheckInterval %s.\n", redis, c.Concurrency, orDefault(c.AsynqCheckInterval, "1s"))
	}
	if c.runs("river") {
		fmt.Fprintf(w, "- River: PostgreSQL with fsync and synchronous_commit on; `MaxWorkers: %d` on the default queue, FetchCooldown %s, FetchPollInterval %s, LISTEN/NOTIFY on; pgx pool of %d connections.\n",
			c.Concurrency, orDefault(c.RiverFetchCooldown, "100ms"), orDefault(c.RiverFetchPollInterval, "1s"),
			riverPoolConns(riverOpts{concurrency: c.Concurrency, enqueuers: c.Enqueuers}))
	}
	paceRate := float64(time.Second) / float64(c.LatencyInterval)
	for _, res := range r.results {
		if res.Err == nil && res.HasLatency && res.rate() < 2*paceRate {
			fmt.Fprintf(w, "- Note: %s ran %.0f jobs/s, less than twice the latency phase's pace (%.0f/s): its p50/p99 may include time queued (a longer -latency-interval separates the two).\n",
				labels[res.System], res.rate(), paceRate)
		}
	}
}

func orDefault(d time.Duration, def string) string {
	if d == 0 {
		return def + " (default)"
	}
	return d.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

// cell fits an error into a table cell: its first line, pipes escaped.
func cell(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// modVersion is the version of module path linked into this program.
func modVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			return d.Version
		}
	}
	return "unknown"
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
				return fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	return "unknown"
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
