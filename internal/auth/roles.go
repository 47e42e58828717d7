// Package auth makes and reads the credentials of a sandrun deployment:
// one NATS operator and account, and a user per identity whose subject
// permissions the server enforces. Roles are data (the table in
// permissions); an identity is a role, a name and, for submitters, the
// origin its jobs run under — bound by the operator when the identity is
// minted, never chosen by a job spec.
package auth

import (
	"fmt"
	"regexp"
	"slices"
)

// Role is what an identity may do.
type Role string

// Roles. See docs/security.md for the table of what each may publish.
const (
	// RoleAdmin is the operator's own identity: everything in the
	// account (schedules, DLQ retries, reruns, layout changes).
	RoleAdmin Role = "admin"
	// RoleWorker claims, runs and commits jobs; it cannot edit schedules.
	RoleWorker Role = "worker"
	// RoleScheduler fires schedules: it submits cron jobs and keeps its
	// schedules bucket; it cannot write job records, leases or results.
	RoleScheduler Role = "scheduler"
	// RoleSubmitter submits jobs under its own name and origin, asks for
	// its own jobs' cancellation and reads. It writes no record, lease,
	// result, event or schedule.
	RoleSubmitter Role = "submitter"
)

// Roles lists every role.
var Roles = []Role{RoleAdmin, RoleWorker, RoleScheduler, RoleSubmitter}

// Origins an identity may be bound to (jobs.Origin values).
var Origins = []string{"manual", "cron", "batch", "subagent"}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Identity is who connects: a role, a name unique in the deployment and
// the origin its submissions carry.
type Identity struct {
	Name   string
	Role   Role
	Origin string
}

// Validate names the field at fault.
func (id Identity) Validate() error {
	if !nameRE.MatchString(id.Name) {
		return fmt.Errorf("identity name: must be 1-64 characters of a-z 0-9 _ - (starting with a letter or digit), got %q", id.Name)
	}
	if !slices.Contains(Roles, id.Role) {
		return fmt.Errorf("identity role: must be one of admin, worker, scheduler, submitter; got %q", id.Role)
	}
	if !slices.Contains(Origins, id.Origin) {
		return fmt.Errorf("identity origin: must be one of manual, cron, batch, subagent; got %q", id.Origin)
	}
	if id.Role == RoleScheduler && id.Origin != "cron" {
		return fmt.Errorf("identity origin: a scheduler submits cron jobs, got %q", id.Origin)
	}
	if id.Role == RoleSubmitter && id.Origin == "cron" {
		// Cron is the schedulers' origin: schedules' secrets open for it.
		return fmt.Errorf("identity origin: cron belongs to schedulers; a submitter is manual, batch or subagent")
	}
	return nil
}

// WithDefaults fills the origin: cron for a scheduler, manual otherwise.
func (id Identity) WithDefaults() Identity {
	if id.Origin == "" {
		id.Origin = "manual"
		if id.Role == RoleScheduler {
			id.Origin = "cron"
		}
	}
	return id
}

// Owner is the identity's token pair in subjects and keys: ORIGIN.NAME.
func (id Identity) Owner() string { return id.Origin + "." + id.Name }

// Permissions are the subjects an identity may publish and subscribe to.
type Permissions struct {
	PubAllow, PubDeny, SubAllow []string
}

// Subjects of the layout the permissions name. They mirror internal/jobs
// (whose tests check the two agree): auth sits below jobs.
const (
	jobsPrefix  = "sandrun.jobs."
	kvState     = "$KV.jobstate."
	kvSchedules = "$KV.schedules."
)

// reads are what every identity may ask of JetStream to read the layout:
// account and stream info, direct gets (records, results, the workers
// list, output objects' metadata and chunks, DLQ entries) and ephemeral
// consumers for watches, event streams, object reads and listings.
var reads = []string{
	"$JS.API.INFO",
	"$JS.API.STREAM.INFO.>",
	"$JS.API.STREAM.NAMES",
	"$JS.API.STREAM.LIST",
	"$JS.API.STREAM.MSG.GET.>",
	"$JS.API.DIRECT.GET.>",
	"$JS.API.CONSUMER.CREATE.EVENTS.>",
	"$JS.API.CONSUMER.CREATE.DLQ.>",
	"$JS.API.CONSUMER.CREATE.KV_jobstate.>",
	"$JS.API.CONSUMER.CREATE.KV_workers.>",
	"$JS.API.CONSUMER.CREATE.KV_schedules.>",
	"$JS.API.CONSUMER.CREATE.OBJ_outputs.>",
	"$JS.API.CONSUMER.MSG.NEXT.EVENTS.>",
	"$JS.API.CONSUMER.MSG.NEXT.DLQ.>",
	"$JS.API.CONSUMER.MSG.NEXT.KV_jobstate.>",
	"$JS.API.CONSUMER.MSG.NEXT.KV_workers.>",
	"$JS.API.CONSUMER.MSG.NEXT.KV_schedules.>",
	"$JS.API.CONSUMER.MSG.NEXT.OBJ_outputs.>",
	"$JS.API.CONSUMER.DELETE.EVENTS.>",
	"$JS.API.CONSUMER.DELETE.DLQ.>",
	"$JS.API.CONSUMER.DELETE.KV_jobstate.>",
	"$JS.API.CONSUMER.DELETE.KV_workers.>",
	"$JS.API.CONSUMER.DELETE.KV_schedules.>",
	"$JS.API.CONSUMER.DELETE.OBJ_outputs.>",
	"$JS.API.CONSUMER.INFO.EVENTS.>",
	"$JS.API.CONSUMER.INFO.KV_jobstate.>",
	"$JS.API.CONSUMER.INFO.OBJ_outputs.>",
	"$JS.FC.>",
	"_INBOX.>",
}

// changesTo are the JetStream API calls that change or remove a stream
// or its messages.
func changesTo(stream string) []string {
	return []string{
		"$JS.API.STREAM.CREATE." + stream,
		"$JS.API.STREAM.UPDATE." + stream,
		"$JS.API.STREAM.DELETE." + stream,
		"$JS.API.STREAM.PURGE." + stream,
		"$JS.API.STREAM.MSG.DELETE." + stream,
	}
}

// PermissionsOf is the role table: what the server lets id publish and
// subscribe to.
func PermissionsOf(id Identity) Permissions {
	owner := id.Owner()
	switch id.Role {
	case RoleAdmin:
		return Permissions{PubAllow: []string{">"}, SubAllow: []string{">"}}
	case RoleWorker:
		// Everything the layout holds, but schedules: their bucket
		// (records and stream) belongs to schedulers and admins. A worker
		// started first may create it, never change it.
		return Permissions{
			PubAllow: []string{">"},
			PubDeny:  append([]string{kvSchedules + ">"}, changesTo("KV_schedules")[1:]...),
			SubAllow: []string{">"},
		}
	case RoleScheduler:
		// Cron jobs under its own name, its schedules, its elections; a
		// schedule's overlap policy asks for cancels of its own jobs.
		// The layout may be created (first start), but nothing deleted.
		pub := []string{
			jobsPrefix + "q.*." + owner,
			kvSchedules + ">",
			"$KV.elections.>",
			kvState + "cancel." + owner + ".>",
			kvState + "wsq." + owner + ".>",
			"$JS.API.>",
		}
		deny := []string{"$JS.API.STREAM.DELETE.>", "$JS.API.STREAM.PURGE.>", "$JS.API.STREAM.MSG.DELETE.>",
			"$JS.API.CONSUMER.CREATE.JOBS.>", "$JS.API.CONSUMER.DURABLE.CREATE.JOBS.>"}
		return Permissions{PubAllow: pub, PubDeny: deny, SubAllow: []string{"_INBOX.>"}}
	default: // RoleSubmitter
		pub := append([]string{
			jobsPrefix + "q.*." + owner,
			kvState + "cancel." + owner + ".>",
			kvState + "wsq." + owner + ".>", // its jobs' places in its workspaces
		}, reads...)
		return Permissions{PubAllow: pub, SubAllow: []string{"_INBOX.>"}}
	}
}
