package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Names of the JetStream assets. They are fixed: every component of a
// deployment must agree on them.
const (
	StreamJobs   = "JOBS"
	StreamEvents = "EVENTS"
	StreamDLQ    = "DLQ"

	BucketState     = "jobstate"
	BucketSchedules = "schedules"
	BucketElections = "elections"
	BucketWorkers   = "workers"
	// BucketOutputs is the object store that held full output before
	// StreamOutputs; it is read for results that name an object, and no
	// longer created.
	BucketOutputs = "outputs"
	// StreamOutputs holds the full output of finished attempts, as
	// chunks on one subject per attempt and stream, each chunk with the
	// job's retention as its TTL.
	StreamOutputs = "OUTPUTS"

	subjectJobs   = "sandrun.jobs."
	subjectEvents = "sandrun.events."
	subjectDLQ    = "sandrun.dlq."
	subjectOutput = "sandrun.out."
)

// OutputSubject holds the output stream (stdout or stderr) of a job's
// attempt in StreamOutputs.
func OutputSubject(id string, attempt int, stream string) string {
	return subjectOutput + id + "." + strconv.Itoa(attempt) + "." + stream
}

// JobSubject is where owner's jobs of queue are dispatched when they
// name no profile lane: the subject clients before lanes published to,
// still consumed (see LaneSubject). owner is ORIGIN.NAME
// (auth.Identity.Owner): the server lets each identity publish only under
// its own, so a worker learns from the subject who submitted a job and
// which origin its policy runs under — nothing in the spec can say
// otherwise.
func JobSubject(queue, owner string) string { return subjectJobs + "q." + queue + "." + owner }

// LaneSubject is where owner's jobs of queue for backend profile are
// dispatched: sandrun.jobs.q.QUEUE~PROFILE.ORIGIN.NAME. Only workers that
// have the profile consume its lane, so a job for a profile no live
// worker serves waits in the stream until one starts. The lane is one
// token (neither queue nor profile names may hold "~"), so a submitter's
// permission sandrun.jobs.q.*.ORIGIN.NAME covers every lane.
func LaneSubject(queue, profile, owner string) string {
	return subjectJobs + "q." + lane(queue, profile) + "." + owner
}

// laneSep joins a queue and a profile into a lane token.
const laneSep = "~"

func lane(queue, profile string) string {
	if profile == "" {
		return queue
	}
	return queue + laneSep + profile
}

// QueueFilter matches the jobs of queue that name no lane (JobSubject),
// whoever submitted them.
func QueueFilter(queue string) string { return subjectJobs + "q." + queue + ".*.*" }

// LaneFilter matches every job of queue's lane for profile ("" for the
// jobs that name no lane), whoever submitted it.
func LaneFilter(queue, profile string) string {
	return subjectJobs + "q." + lane(queue, profile) + ".*.*"
}

// AnonymousOwner is the owner of submissions over a connection without
// credentials (a deployment with authentication off, tests in-process).
const AnonymousOwner = "manual.anonymous"

// ParseJobSubject splits a dispatch subject into its queue, its lane's
// profile ("" for JobSubject) and its owner.
func ParseJobSubject(subject string) (queue, profile string, owner Owner, ok bool) {
	rest, ok := strings.CutPrefix(subject, subjectJobs+"q.")
	if !ok {
		return "", "", Owner{}, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", Owner{}, false
	}
	queue, profile, hasLane := strings.Cut(parts[0], laneSep)
	if queue == "" || hasLane && (profile == "" || strings.Contains(profile, laneSep)) {
		return "", "", Owner{}, false
	}
	return queue, profile, Owner{Origin: Origin(parts[1]), Name: parts[2]}, true
}

// Owner is who submitted a job, as the server vouched for it: the origin
// its identity is bound to, and its name.
type Owner struct {
	Origin Origin `json:"origin"`
	Name   string `json:"name"`
}

// String is the owner's subject tokens, ORIGIN.NAME.
func (o Owner) String() string { return string(o.Origin) + "." + o.Name }

// ParseOwner reads ORIGIN.NAME.
func ParseOwner(s string) (Owner, bool) {
	origin, name, ok := strings.Cut(s, ".")
	if !ok || origin == "" || name == "" || strings.Contains(name, ".") {
		return Owner{}, false
	}
	return Owner{Origin: Origin(origin), Name: name}, true
}

// DelaySubject holds the schedule (@at) of a job's delayed retry.
func DelaySubject(id string) string { return subjectJobs + "delay." + id }

// IsDelaySubject reports whether subject is a delayed retry's schedule.
func IsDelaySubject(subject string) bool {
	id, ok := strings.CutPrefix(subject, subjectJobs+"delay.")
	return ok && id != ""
}

// EventSubject is where events of kind for job id are published.
func EventSubject(id, kind string) string { return subjectEvents + id + "." + kind }

// EventFilter matches every event of job id, and no event of another
// job: exactly one token (the kind) follows the id, so job x never sees
// the events of x.1.
func EventFilter(id string) string { return subjectEvents + id + ".*" }

// DLQSubject holds the dead-letter entry of job id.
func DLQSubject(id string) string { return subjectDLQ + id }

// ConsumerName is the durable pull consumer of queue's lane for profile
// ("" for the jobs that name no lane).
func ConsumerName(queue, profile string) string { return "q-" + lane(queue, profile) }

// RunKey is the job record's key in the jobstate bucket.
func RunKey(id string) string { return "run." + id }

// LeaseKey is the job lease's key: who may act on the job, and whether
// its holder is alive. The record's own revision fences the holder.
func LeaseKey(id string) string { return "lease." + id }

// WorkspaceQueueKey is the place of job id, submitted at, in owner's
// workspace ws: the keys of a workspace sort in submission order, and
// its jobs run in that order (the submitter writes it after the job).
func WorkspaceQueueKey(owner, ws string, at time.Time, id string) string {
	return fmt.Sprintf("%s%020d-%s", WorkspaceQueuePrefix(owner, ws), at.UnixNano(), id)
}

// WorkspaceQueuePrefix is the prefix of owner's workspace ws's queue keys.
func WorkspaceQueuePrefix(owner, ws string) string { return "wsq." + owner + "." + ws + "." }

// WorkspaceLockKey is the lease a running job of owner's workspace ws
// holds: one at a time.
func WorkspaceLockKey(owner, ws string) string { return "wslock." + owner + "." + ws }

// WorkspaceInfoKey holds what `sandrun workspace ls` shows of owner's
// workspace ws (WorkspaceInfo), written when a job of it starts.
func WorkspaceInfoKey(owner, ws string) string { return WorkspaceInfoPrefix + owner + "." + ws }

// WorkspaceInfoPrefix starts every WorkspaceInfoKey.
const WorkspaceInfoPrefix = "wsinfo."

// WorkspaceInfo is a workspace as its owner lists it.
type WorkspaceInfo struct {
	Workspace string    `json:"workspace"`
	Queue     string    `json:"queue"`
	Backend   string    `json:"backend"`
	LastJob   string    `json:"last_job"`
	LastUsed  time.Time `json:"last_used"`
}

// WorkspaceStorage is the name a backend keeps owner's workspace ws
// under (a directory, a volume): the owner's hash keeps two submitters'
// workspaces of one name apart.
func WorkspaceStorage(owner, ws string) string {
	sum := sha256.Sum256([]byte(owner))
	return hex.EncodeToString(sum[:6]) + "-" + ws
}

// CancelKey is the key of owner's request to cancel job id, watched by
// workers. A worker honours it only for a job of that owner: each
// identity may write cancel keys under its own owner tokens alone.
func CancelKey(owner, id string) string { return "cancel." + owner + "." + id }

// CancelFilter matches every cancel request.
const CancelFilter = "cancel.>"

// ParseCancelKey splits a cancel request's key.
func ParseCancelKey(key string) (owner Owner, id string, ok bool) {
	rest, ok := strings.CutPrefix(key, "cancel.")
	if !ok {
		return Owner{}, "", false
	}
	parts := strings.SplitN(rest, ".", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Owner{}, "", false
	}
	return Owner{Origin: Origin(parts[0]), Name: parts[1]}, parts[2], true
}

// SealKey is the jobstate key holding the workers' public curve key:
// submitters seal secret_env values to it. Only workers (and admins) may
// write it.
const SealKey = "sealkey"

// LayoutConfig sizes the JetStream assets.
type LayoutConfig struct {
	// Replicas for every stream and bucket (1 for a single server, 3 for
	// a cluster).
	Replicas int
	// Memory selects memory storage (tests); the default is file storage.
	Memory bool
	// Retention is how long finished jobs (records, results, outputs)
	// are kept, by final state, and events; DLQ entries are kept twice
	// as long as dead jobs.
	Retention Retention
	// DedupeWindow is JOBS' duplicate window (Nats-Msg-Id).
	DedupeWindow time.Duration
	// MaxEventBytes bounds the EVENTS stream (live output included).
	MaxEventBytes int64
	// MaxOutputBytes bounds the OUTPUTS stream: past it the oldest
	// outputs go, and one job's output can never fill JetStream's storage
	// and stop every write of the deployment.
	MaxOutputBytes int64
	// KeepSchedules leaves the schedules bucket as it is: opened, or
	// created with the defaults only if it is missing. A worker's
	// credentials may not change it (schedules belong to schedulers and
	// admins).
	KeepSchedules bool
	// PlaceWithin bounds how long creating the layout waits for the
	// cluster to place each asset (a cluster still forming, a leader
	// election, several components creating the layout at once); default
	// one minute.
	PlaceWithin time.Duration
}

// ExpiryMarkerTTL is how long the server's marker of a removed key (a
// record whose retention passed, a lease that expired) stays in the
// jobstate bucket: long enough for the reaper to see a lease's expiry
// across a leadership change and for `status` to say a job expired, short
// enough that the markers of a busy deployment (one per finished job)
// add little to what the server holds: at 200 jobs/s, 120,000 markers.
const ExpiryMarkerTTL = 10 * time.Minute

// WithDefaults fills zero fields.
func (c LayoutConfig) WithDefaults() LayoutConfig {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	c.Retention = c.Retention.WithDefaults()
	if c.DedupeWindow == 0 {
		c.DedupeWindow = 20 * time.Minute
	}
	if c.MaxEventBytes == 0 {
		c.MaxEventBytes = 1 << 30
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = 2 << 30
	}
	if c.PlaceWithin == 0 {
		c.PlaceWithin = time.Minute
	}
	return c
}

// MinServerVersion is the oldest nats-server with every feature the layout
// uses: per-message TTL and limit markers (2.11), fenced publishes on
// another subject (2.11) and message schedules for delayed retries (2.12).
const MinServerVersion = "2.12.0"

// ErrServerTooOld is returned by EnsureLayout for servers older than
// MinServerVersion.
var ErrServerTooOld = errors.New("nats-server too old")

// CheckServerVersion returns ErrServerTooOld unless v >= MinServerVersion.
func CheckServerVersion(v string) error {
	if v == "" {
		return fmt.Errorf("%w: server did not report a version", ErrServerTooOld)
	}
	if versionLess(v, MinServerVersion) {
		return fmt.Errorf("%w: server is %s, sandrun needs >= %s (message TTLs, limit markers, message schedules)",
			ErrServerTooOld, v, MinServerVersion)
	}
	return nil
}

func versionLess(a, b string) bool {
	pa, pb := versionParts(a), versionParts(b)
	for i := range 3 {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return false
}

func versionParts(v string) [3]int {
	v = strings.TrimPrefix(v, "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	var out [3]int
	for i, p := range strings.SplitN(v, ".", 3) {
		out[i], _ = strconv.Atoi(p)
	}
	return out
}

// EnsureLayout creates or updates every stream and bucket
// sandrun uses. It is idempotent and safe to run from every component at
// start-up. serverVersion is nc.ConnectedServerVersion().
func EnsureLayout(ctx context.Context, js jetstream.JetStream, serverVersion string, cfg LayoutConfig) (*Store, error) {
	if err := CheckServerVersion(serverVersion); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Retention.Validate(); err != nil {
		return nil, err
	}
	storage := jetstream.FileStorage
	if cfg.Memory {
		storage = jetstream.MemoryStorage
	}
	streams := []jetstream.StreamConfig{{
		Name:      StreamJobs,
		Subjects:  []string{subjectJobs + ">"},
		Retention: jetstream.WorkQueuePolicy,
		// No message or byte limit: a stream with message schedules
		// cannot use DiscardNew, and DiscardOld would silently drop
		// queued jobs. Backpressure comes from the JetStream storage
		// limit instead: when it is reached, submit fails.
		Duplicates:        cfg.DedupeWindow,
		AllowMsgSchedules: true,
		Storage:           storage,
		Replicas:          cfg.Replicas,
	}, {
		Name:      StreamEvents,
		Subjects:  []string{subjectEvents + ">"},
		Retention: jetstream.LimitsPolicy,
		MaxAge:    cfg.Retention.Events,
		MaxBytes:  cfg.MaxEventBytes,
		Discard:   jetstream.DiscardOld,
		Storage:   storage,
		Replicas:  cfg.Replicas,
	}, {
		Name:              StreamDLQ,
		Subjects:          []string{subjectDLQ + ">"},
		Retention:         jetstream.LimitsPolicy,
		MaxAge:            2 * cfg.Retention.Dead,
		MaxMsgsPerSubject: 1,
		Storage:           storage,
		Replicas:          cfg.Replicas,
	}, {
		// Full output: each chunk carries its job's retention as a TTL,
		// so a finished job's output goes with its record; MaxAge is the
		// backstop, and the byte limit keeps output from filling the
		// storage every write of the deployment needs.
		Name:        StreamOutputs,
		Subjects:    []string{subjectOutput + ">"},
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      cfg.Retention.Longest(),
		MaxBytes:    cfg.MaxOutputBytes,
		Discard:     jetstream.DiscardOld,
		AllowMsgTTL: true,
		AllowDirect: true,
		Storage:     storage,
		Replicas:    cfg.Replicas,
	}}
	for _, sc := range streams {
		err := placing(ctx, cfg, "stream "+sc.Name, func(ctx context.Context) error {
			_, err := js.CreateOrUpdateStream(ctx, sc)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	kvStorage := jetstream.FileStorage
	if cfg.Memory {
		kvStorage = jetstream.MemoryStorage
	}
	buckets := []jetstream.KeyValueConfig{{
		Bucket:         BucketState,
		Description:    "sandrun job records, leases and cancel requests",
		History:        1,
		TTL:            cfg.Retention.Longest(),
		Metadata:       map[string]string{metadataRetention: cfg.Retention.metadata()},
		LimitMarkerTTL: ExpiryMarkerTTL,
		Storage:        kvStorage,
		Replicas:       cfg.Replicas,
	}, {
		Bucket:      BucketSchedules,
		Description: "sandrun schedules and their last fired slot",
		History:     5,
		Storage:     kvStorage,
		Replicas:    cfg.Replicas,
	}, {
		Bucket:         BucketElections,
		Description:    "sandrun leader elections (scheduler, reaper)",
		History:        1,
		LimitMarkerTTL: time.Hour,
		Storage:        kvStorage,
		Replicas:       cfg.Replicas,
	}, {
		Bucket:         BucketWorkers,
		Description:    "sandrun live workers",
		History:        1,
		LimitMarkerTTL: time.Hour,
		Storage:        kvStorage,
		Replicas:       cfg.Replicas,
	}}
	kvs := make(map[string]jetstream.KeyValue, len(buckets))
	for _, bc := range buckets {
		err := placing(ctx, cfg, "bucket "+bc.Bucket, func(ctx context.Context) error {
			if cfg.KeepSchedules && bc.Bucket == BucketSchedules {
				kv, err := js.KeyValue(ctx, bc.Bucket)
				if errors.Is(err, jetstream.ErrBucketNotFound) {
					kv, err = js.CreateKeyValue(ctx, bc)
				}
				kvs[bc.Bucket] = kv
				return err
			}
			kv, err := js.CreateOrUpdateKeyValue(ctx, bc)
			kvs[bc.Bucket] = kv
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	// The object store of earlier versions is opened if it is there:
	// results committed before StreamOutputs name their objects in it.
	obj, err := js.ObjectStore(ctx, BucketOutputs)
	if err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("object store %s: %w", BucketOutputs, err)
	}
	dep, err := deploymentID(ctx, js)
	if err != nil {
		return nil, err
	}
	return &Store{
		Deployment: dep,
		JS:         js,
		State:      kvs[BucketState],
		Schedules:  kvs[BucketSchedules],
		Elections:  kvs[BucketElections],
		Workers:    kvs[BucketWorkers],
		Outputs:    obj,
		Retention:  cfg.Retention,
	}, nil
}

// QueueConfig is the dispatch consumer of one queue.
type QueueConfig struct {
	// ClaimWindow is the consumer's AckWait: how long a fetched message
	// may wait for its claim before it is redelivered. It is NOT the run
	// time; runs are covered by the lease.
	ClaimWindow time.Duration
}

// EnsureLane creates or updates the durable pull consumer of queue's lane
// for profile ("" for the jobs that name no lane). The consumers of a
// queue's lanes filter disjoint subjects, as a WorkQueue stream requires.
func (s *Store) EnsureLane(ctx context.Context, queue, profile string, qc QueueConfig) (jetstream.Consumer, error) {
	if qc.ClaimWindow == 0 {
		qc.ClaimWindow = time.Minute
	}
	desc := "sandrun dispatch for queue " + queue + ", jobs that name no lane"
	if profile != "" {
		desc = "sandrun dispatch for queue " + queue + ", profile " + profile
	}
	name := ConsumerName(queue, profile)
	c, err := s.JS.CreateOrUpdateConsumer(ctx, StreamJobs, jetstream.ConsumerConfig{
		Durable:       name,
		Description:   desc,
		FilterSubject: LaneFilter(queue, profile),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       qc.ClaimWindow,
		MaxDeliver:    -1,
		MaxWaiting:    4096,
		MaxAckPending: 10_000,
	})
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", name, err)
	}
	return c, nil
}

// ErrNoLayout is returned by OpenLayout when the assets do not exist yet.
var ErrNoLayout = errors.New("sandrun's JetStream layout does not exist on this server (start a worker, or `sandrun dev`, first)")

// OpenLayout binds to an existing layout without creating or changing
// anything: clients must not reconfigure what the daemons set up.
func OpenLayout(ctx context.Context, js jetstream.JetStream, serverVersion string) (*Store, error) {
	if err := CheckServerVersion(serverVersion); err != nil {
		return nil, err
	}
	st := &Store{JS: js}
	var err error
	for _, b := range []struct {
		name string
		kv   *jetstream.KeyValue
	}{{BucketState, &st.State}, {BucketSchedules, &st.Schedules}, {BucketElections, &st.Elections}, {BucketWorkers, &st.Workers}} {
		if *b.kv, err = js.KeyValue(ctx, b.name); err != nil {
			if errors.Is(err, jetstream.ErrBucketNotFound) {
				return nil, ErrNoLayout
			}
			return nil, fmt.Errorf("bucket %s: %w", b.name, err)
		}
	}
	if st.Outputs, err = js.ObjectStore(ctx, BucketOutputs); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("object store %s: %w", BucketOutputs, err)
	}
	if st.Retention, err = readRetention(ctx, st.State); err != nil {
		return nil, err
	}
	if st.Deployment, err = deploymentID(ctx, js); err != nil {
		return nil, err
	}
	for _, s := range []string{StreamJobs, StreamEvents, StreamDLQ, StreamOutputs} {
		if _, err := js.Stream(ctx, s); err != nil {
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				return nil, ErrNoLayout
			}
			return nil, fmt.Errorf("stream %s: %w", s, err)
		}
	}
	return st, nil
}

// deploymentID names this deployment (one JetStream layout): the creation
// time of its jobstate stream. Workloads are labelled with it, so that
// deployments sharing a container engine never reap each other's.
func deploymentID(ctx context.Context, js jetstream.JetStream) (string, error) {
	st, err := js.Stream(ctx, "KV_"+BucketState)
	if err != nil {
		return "", fmt.Errorf("stream KV_%s: %w", BucketState, err)
	}
	return strconv.FormatInt(st.CachedInfo().Created.UnixNano(), 36), nil
}

// WorkerInfo is a live worker's entry in the workers bucket (key: its
// name), kept while it runs.
type WorkerInfo struct {
	Name     string                   `json:"name"`
	Queues   []string                 `json:"queues"`
	Slots    int                      `json:"slots"`
	Backends []string                 `json:"backends"`
	Profiles map[string]WorkerProfile `json:"profiles,omitempty"`
	// StartedAt is when the worker started.
	StartedAt time.Time `json:"started_at"`
}

// WorkerProfile is one of a worker's backend profiles as it resolved at
// start-up.
type WorkerProfile struct {
	Kind        string `json:"kind"`
	Description string `json:"description,omitempty"`
}

// placeAttempt bounds one attempt at creating an asset. Creating a stream
// takes milliseconds on a healthy cluster.
const placeAttempt = 2 * time.Second

// placing runs create until it succeeds, retrying timeouts and placement
// errors for up to cfg.PlaceWithin, and words the final error for the
// operator.
func placing(ctx context.Context, cfg LayoutConfig, what string, create func(ctx context.Context) error) error {
	replicas := cfg.Replicas
	deadline := time.Now().Add(cfg.PlaceWithin)
	for wait := 200 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		// Short attempts: when two components create the same asset at
		// once, the meta leader may answer only the first request, and
		// the other's retry finds the asset made.
		actx, cancel := context.WithTimeout(ctx, placeAttempt)
		err := create(actx)
		cancel()
		if err == nil {
			return nil
		}
		if !retryablePlacement(err) || ctx.Err() != nil || time.Now().After(deadline) {
			if replicas > 1 && retryablePlacement(err) {
				return fmt.Errorf("%s: cannot place %d replicas within %s (a cluster needs %d JetStream servers routed to each other): %w", what, replicas, cfg.PlaceWithin, replicas, err)
			}
			if replicas > 1 && isClusteringRequired(err) {
				return fmt.Errorf("%s: %d replicas need a JetStream cluster, and this server is not in one (start it with --cluster-name and --routes, or use --replicas 1): %w", what, replicas, err)
			}
			return fmt.Errorf("%s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// isClusteringRequired: replicas > 1 on a server that is not clustered.
func isClusteringRequired(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == ErrCodeReplicasNeedCluster
}

// retryablePlacement reports errors a cluster that is forming or
// electing a leader gives.
func retryablePlacement(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case ErrCodeNoPeers, ErrCodeTemporarilyUnavailable, ErrCodeInsufficientResources:
			return true
		}
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)
}

// readRetention reads the deployment's retention from the jobstate
// bucket; a bucket created before retention had states gives the
// defaults.
func readRetention(ctx context.Context, kv jetstream.KeyValue) (Retention, error) {
	status, err := kv.Status(ctx)
	if err != nil {
		return Retention{}, fmt.Errorf("bucket %s: %w", BucketState, err)
	}
	md, ok := status.Metadata()[metadataRetention]
	if !ok {
		return DefaultRetention(), nil
	}
	r, err := parseRetention(md)
	if err != nil {
		return Retention{}, fmt.Errorf("bucket %s: metadata %s: %w", BucketState, metadataRetention, err)
	}
	return r, nil
}
