// Package metrics defines sandrun's Prometheus metrics on a private
// registry. Components receive a *Metrics; nothing registers globally.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics holds every sandrun metric. Label values are bounded: queue,
// backend (profile), status, policy decision and rule — never a job ID.
type Metrics struct {
	Registry *prometheus.Registry

	JobsClaimed     *prometheus.CounterVec   // queue, backend
	JobsFinished    *prometheus.CounterVec   // queue, backend, status
	RunDuration     *prometheus.HistogramVec // queue, backend
	ScriptTimeouts  *prometheus.CounterVec   // backend
	JobsRunning     *prometheus.GaugeVec     // queue
	Slots           prometheus.Gauge
	LeaseRenewals   prometheus.Counter
	LeaseLosses     prometheus.Counter
	StaleCommits    prometheus.Counter
	ReaperRecovered *prometheus.CounterVec // action: requeued, dead, republished, canceled, batch_end
	ReaperIndexed   prometheus.Gauge
	Retries         *prometheus.CounterVec // queue
	BatchThrottled  *prometheus.CounterVec // queue
	HandedBack      *prometheus.CounterVec // queue
	BatchesDone     prometheus.Counter
	InvalidMessages *prometheus.CounterVec // reason
	PolicyDecisions *prometheus.CounterVec // decision, mode, rule
	Leader          *prometheus.GaugeVec   // role
	SubmitToStart   prometheus.Histogram
	LeaderChanges   *prometheus.CounterVec // role
	WriteRetries    *prometheus.CounterVec // op

	ScheduleFires   *prometheus.CounterVec // kind: slot, catchup, trigger
	ScheduleSkipped *prometheus.CounterVec // reason: overlap, suspended
	ScheduleMissed  prometheus.Counter
	ScheduleErrors  prometheus.Counter
	FireLag         prometheus.Histogram
	Schedules       prometheus.Gauge
	OrphansReaped   *prometheus.CounterVec // backend

	ContainerCreate    *prometheus.HistogramVec // backend
	ContainerStart     *prometheus.HistogramVec // backend
	ImagePulls         *prometheus.CounterVec   // backend, result
	ImagePullSeconds   *prometheus.HistogramVec // backend
	OOMKills           *prometheus.CounterVec   // backend
	HostAccessRefusals *prometheus.CounterVec   // backend
	BackendErrors      *prometheus.CounterVec   // backend, kind: permanent, unavailable, other
	BackendAbandoned   *prometheus.CounterVec   // backend

	SSHConnections       *prometheus.CounterVec // backend, result: ok, error
	SSHConnected         *prometheus.GaugeVec   // backend
	SSHReconnects        *prometheus.CounterVec // backend
	SSHResumedStreams    *prometheus.CounterVec // backend
	SSHRemoteKills       *prometheus.CounterVec // backend, signal
	SSHHostKeyRejections *prometheus.CounterVec // backend, reason: changed, unknown, revoked
	SSHSessionsInUse     *prometheus.GaugeVec   // backend

	SIFCacheBytes  *prometheus.GaugeVec
	SIFCacheBudget *prometheus.GaugeVec
	SIFCacheImages *prometheus.GaugeVec
	SIFHits        *prometheus.CounterVec   // backend: the singularity profile
	SIFMisses      *prometheus.CounterVec   // backend
	SIFEvictions   *prometheus.CounterVec   // backend; reason: size, age, corrupt, purged
	SIFPulls       *prometheus.CounterVec   // backend; result: ok, error
	SIFPullSeconds *prometheus.HistogramVec // backend
}

// New creates the metrics on a fresh registry, with the Go and process
// collectors.
func New() *Metrics {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		Registry: r,
		JobsClaimed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandrun_jobs_claimed_total", Help: "Job attempts claimed by this worker.",
		}, []string{"queue", "backend"}),
		JobsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandrun_jobs_finished_total", Help: "Job attempts finished, by outcome (retry_wait for a failed attempt that will be retried).",
		}, []string{"queue", "backend", "status"}),
		RunDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sandrun_job_run_duration_seconds", Help: "Wall time of job commands on their backend.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		}, []string{"queue", "backend"}),
		ScriptTimeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandrun_script_timeouts_total", Help: "Job commands killed by their timeout.",
		}, []string{"backend"}),
		JobsRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sandrun_jobs_running", Help: "Jobs running on this worker.",
		}, []string{"queue"}),
		Slots: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sandrun_worker_slots", Help: "Concurrency slots of this worker.",
		}),
		LeaseRenewals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sandrun_lease_renewals_total", Help: "Successful job lease renewals.",
		}),
		LeaseLosses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sandrun_lease_losses_total", Help: "Job leases lost while running (the job was killed: self-fencing).",
		}),
		StaleCommits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sandrun_stale_commits_rejected_total", Help: "Result commits refused because the job record moved since the writer's claim (a stale holder).",
		}),
		ReaperIndexed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sandrun_reaper_indexed_jobs", Help: "Jobs that have not ended, in the reaper's index (0 on workers that do not lead the reaper)."}),
		ReaperRecovered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandrun_reaper_recoveries_total", Help: "Jobs recovered by the reaper after their lease expired.",
		}, []string{"action"}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandrun_retries_total", Help: "Failed attempts scheduled for retry.",
		}, []string{"queue"}),
		WriteRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandrun_write_retries_total", Help: "JetStream writes tried again after a transient failure (leader election, node restart, reconnect).",
		}, []string{"op"}),
		BatchThrottled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandrun_batch_throttled_total", Help: "Batch items put back because their batch's max_parallel slots were all taken.",
		}, []string{"queue"}),
		HandedBack: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandrun_dispatch_handed_back_total", Help: "Messages a worker received when another of its lanes had just taken its last free slot, and handed straight back.",
		}, []string{"queue"}),
		BatchesDone: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sandrun_batches_completed_total", Help: "Batch completions announced (batch_completed events).",
		}),
		InvalidMessages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandrun_invalid_messages_total", Help: "Messages on the jobs subjects that were not valid jobs (sent to the DLQ).",
		}, []string{"reason"}),
		PolicyDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandrun_policy_decisions_total", Help: "Approval policy decisions.",
		}, []string{"decision", "mode", "rule"}),
		Leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sandrun_leader", Help: "1 while this process leads the role.",
		}, []string{"role"}),
		SubmitToStart: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sandrun_submit_to_start_seconds", Help: "Time from submit to the start of the first attempt.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30, 300},
		}),
		LeaderChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandrun_leader_changes_total", Help: "Times this process became leader of the role.",
		}, []string{"role"}),
		ScheduleFires: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandrun_schedule_fires_total", Help: "Jobs submitted by schedules: regular slots, catch-up of missed slots, manual triggers.",
		}, []string{"kind"}),
		ScheduleSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sandrun_schedule_skipped_total", Help: "Slots not fired: the previous run was still going (overlap: forbid) or the schedule is suspended.",
		}, []string{"reason"}),
		ScheduleMissed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sandrun_schedule_missed_total", Help: "Slots missed while no scheduler led, older than their catch-up window.",
		}),
		ScheduleErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sandrun_schedule_fire_errors_total", Help: "Fires that failed to submit (retried until the slot leaves its catch-up window).",
		}),
		FireLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sandrun_schedule_fire_lag_seconds", Help: "Time from a slot to the publish of its job.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}),
		Schedules: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sandrun_schedules", Help: "Schedules loaded by the leading scheduler.",
		}),
	}
	m.OrphansReaped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandrun_orphans_reaped_total", Help: "Workloads (containers) removed because their job attempt was no longer live.",
	}, []string{"backend"})
	r.MustRegister(m.OrphansReaped)
	lat := []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	m.ContainerCreate = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "sandrun_container_create_seconds", Help: "Time to create a job's container.", Buckets: lat}, []string{"backend"})
	m.ContainerStart = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "sandrun_container_start_seconds", Help: "Time to start a job's container (or exec into its session).", Buckets: lat}, []string{"backend"})
	m.ImagePulls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandrun_image_pulls_total", Help: "Image pulls, by result (ok, error)."}, []string{"backend", "result"})
	m.ImagePullSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "sandrun_image_pull_seconds", Help: "Time spent pulling images.", Buckets: []float64{.1, .5, 1, 5, 10, 30, 60, 300, 900}}, []string{"backend"})
	m.OOMKills = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandrun_oom_kills_total", Help: "Jobs killed for exceeding their memory limit."}, []string{"backend"})
	m.HostAccessRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandrun_host_access_refusals_total", Help: "Jobs refused because their workload would reach the host."}, []string{"backend"})
	m.SSHConnections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandrun_ssh_connections_total", Help: "SSH connections dialled (through any jump hosts), by result (ok, error)."}, []string{"backend", "result"})
	m.SSHConnected = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sandrun_ssh_connected", Help: "1 while the profile's multiplexed SSH connection is up."}, []string{"backend"})
	m.SSHReconnects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandrun_ssh_reconnects_total", Help: "SSH connections re-dialled after the previous one broke."}, []string{"backend"})
	m.SSHResumedStreams = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandrun_ssh_resumed_streams_total", Help: "Remote jobs whose output was resumed from its offset on a new connection, or adopted from an earlier attempt."}, []string{"backend"})
	m.SSHRemoteKills = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandrun_ssh_remote_kills_total", Help: "Signals sent to remote process groups (timeouts, cancels, orphans)."}, []string{"backend", "signal"})
	m.SSHHostKeyRejections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandrun_ssh_host_key_rejections_total", Help: "Connections refused because the host key was unknown, changed or revoked."}, []string{"backend", "reason"})
	m.SSHSessionsInUse = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sandrun_ssh_sessions_in_use", Help: "SSH exec sessions open on the profile's connection (bounded by max_sessions)."}, []string{"backend"})
	m.SIFCacheBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sandrun_sif_cache_bytes", Help: "Bytes of SIF images in the cache (as of this process's last change or scan)."}, []string{"backend"})
	m.SIFCacheBudget = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sandrun_sif_cache_budget_bytes", Help: "The SIF cache's size budget (0: none); images in use may hold it over."}, []string{"backend"})
	m.SIFCacheImages = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sandrun_sif_cache_images", Help: "SIF images in the cache."}, []string{"backend"})
	m.SIFHits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandrun_sif_cache_hits_total", Help: "Image uses served from the cache after the file checked sound."}, []string{"backend"})
	m.SIFMisses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandrun_sif_cache_misses_total", Help: "Image uses that needed a pull (not cached, purged or corrupt)."}, []string{"backend"})
	m.SIFEvictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandrun_sif_cache_evictions_total", Help: "SIF images dropped from the cache, by reason (size, age, corrupt, purged)."}, []string{"backend", "reason"})
	m.SIFPulls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandrun_sif_pulls_total", Help: "SIF pulls, by result (ok, error)."}, []string{"backend", "result"})
	m.SIFPullSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "sandrun_sif_pull_seconds", Help: "Time to pull (build) one SIF image.", Buckets: []float64{.1, .5, 1, 5, 10, 30, 60, 300, 900, 1800}}, []string{"backend"})
	r.MustRegister(m.SIFCacheBytes, m.SIFCacheBudget, m.SIFCacheImages, m.SIFHits, m.SIFMisses, m.SIFEvictions, m.SIFPulls, m.SIFPullSeconds)
	r.MustRegister(m.SSHConnections, m.SSHConnected, m.SSHReconnects, m.SSHResumedStreams, m.SSHRemoteKills, m.SSHHostKeyRejections, m.SSHSessionsInUse)
	m.BackendErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandrun_backend_errors_total", Help: "Job attempts a backend failed to run (not the command's own failure), by kind: permanent, unavailable, other."}, []string{"backend", "kind"})
	m.BackendAbandoned = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sandrun_backend_abandoned_total", Help: "Job attempts whose backend had not returned long after the job was stopped (timeout, cancel, lease loss, shutdown): given up on, the workload possibly still running."}, []string{"backend"})
	r.MustRegister(m.ContainerCreate, m.ContainerStart, m.ImagePulls, m.ImagePullSeconds, m.OOMKills, m.HostAccessRefusals, m.BackendErrors, m.BackendAbandoned)
	r.MustRegister(m.LeaderChanges, m.ScheduleFires, m.ScheduleSkipped, m.ScheduleMissed, m.ScheduleErrors, m.FireLag, m.Schedules)
	r.MustRegister(m.JobsClaimed, m.JobsFinished, m.RunDuration, m.ScriptTimeouts, m.JobsRunning,
		m.Slots, m.LeaseRenewals, m.LeaseLosses, m.StaleCommits, m.ReaperRecovered, m.ReaperIndexed, m.Retries, m.BatchThrottled, m.HandedBack, m.BatchesDone, m.WriteRetries,
		m.InvalidMessages, m.PolicyDecisions, m.Leader, m.SubmitToStart)
	return m
}
