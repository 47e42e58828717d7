package docker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/backends"
)

// A session's jobs share one container, created with the options of the
// job that started it. A later job is judged, and run, on that container's
// real configuration — inspected through the engine — and may ask for the
// same options or none; anything else is refused.

// ErrSessionOptions is wrapped by the error of a job whose container
// options differ from those of its session's running container. It also
// wraps backends.ErrPermanent: the job would meet the same container again.
var ErrSessionOptions = errors.New("container options differ from the session container's")

// ErrSessionJudged is wrapped by Run's error when a job's session
// container reaches the host but the job was judged as isolated (its
// session container was created between HostAccess and Run). It is not
// permanent: the next attempt is judged on the session container.
var ErrSessionJudged = errors.New("session container reaches the host, and the job was judged without it")

// joinedSession is the running container of a session, as the engine
// reports it.
type joinedSession struct {
	key, id string
	host    *container.HostConfig
}

// describe names the session container in a host-access reason.
func (s *joinedSession) describe(reason string) string {
	return fmt.Sprintf("session %q container %.12s: %s", s.key, s.id, reason)
}

// joinSession returns the running container spec would join, if its
// session has one; nil if it has none yet (the job's own configuration
// will create it). own is the job's own host configuration.
func (d *Docker) joinSession(ctx context.Context, spec backends.Spec, own *container.HostConfig) (*joinedSession, error) {
	d.sessMu.Lock()
	s := d.sessions[spec.Session]
	d.sessMu.Unlock()
	if s == nil {
		return nil, nil
	}
	return d.inspectSession(ctx, spec, s.id, own)
}

// inspectSession reads the real configuration of session container cid
// and checks that spec may join it: nil if it no longer runs (Run then
// replaces it with one of spec's own configuration).
func (d *Docker) inspectSession(ctx context.Context, spec backends.Spec, cid string, own *container.HostConfig) (*joinedSession, error) {
	info, err := d.api.ContainerInspect(ctx, cid, client.ContainerInspectOptions{})
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("docker: inspect session %q container: %w: %w", spec.Session, err, backends.ErrUnavailable)
	}
	c := info.Container
	if c.State == nil || !c.State.Running {
		return nil, nil
	}
	if c.HostConfig == nil {
		return nil, fmt.Errorf("docker: session %q container %.12s: the engine reports no host configuration: %w", spec.Session, cid, backends.ErrUnavailable)
	}
	if err := d.sameOptions(spec, own, c.HostConfig); err != nil {
		return nil, err
	}
	return &joinedSession{key: spec.Session, id: cid, host: c.HostConfig}, nil
}

// sameOptions checks that a job whose own configuration is own may join
// a session container configured as sess: it asks for no container options
// beyond the profile's, or for exactly the session container's.
func (d *Docker) sameOptions(spec backends.Spec, own, sess *container.HostConfig) error {
	plain := spec
	plain.Container = nil
	_, profile, err := d.containerConfig(plain)
	if err != nil {
		return err
	}
	job := viewOptions(own)
	if len(diffOptions(job, viewOptions(profile))) == 0 {
		return nil
	}
	diff := diffOptions(job, viewOptions(sess))
	if len(diff) == 0 {
		return nil
	}
	return fmt.Errorf("docker: session %q: %w (%s): a session's jobs share its container, so they ask for its options or none: %w",
		spec.Session, ErrSessionOptions, strings.Join(diff, "; "), backends.ErrPermanent)
}

// optionField is one container option of a host configuration, rendered
// so that the engine's own normalisation (capability prefixes, the
// default IPC mode, ...) compares equal.
type optionField struct{ name, value string }

// viewOptions renders what a job's container options set in h, named as
// the options are.
func viewOptions(h *container.HostConfig) []optionField {
	var mounts, devices, caps []string
	for _, m := range h.Mounts {
		mounts = append(mounts, mountString(m.Source, m.Target, m.ReadOnly))
	}
	for _, b := range h.Binds {
		m := bindsEntry(b)
		mounts = append(mounts, mountString(m.Source, m.Target, m.ReadOnly))
	}
	for _, dev := range h.Devices {
		devices = append(devices, dev.PathOnHost+":"+dev.PathInContainer)
	}
	for _, c := range h.CapAdd {
		caps = append(caps, capName(c))
	}
	list := func(l []string) string {
		slices.Sort(l)
		return "[" + strings.Join(slices.Compact(l), " ") + "]"
	}
	// An empty mode is the engine's default, a private namespace; so is
	// a mode named in same.
	private := func(mode string, same ...string) string {
		mode = strings.ToLower(mode)
		if mode == "" || mode == "private" || slices.Contains(same, mode) {
			return "private"
		}
		return mode
	}
	network := strings.ToLower(string(h.NetworkMode))
	if network == "" || network == "default" {
		network = "bridge"
	}
	return []optionField{
		{"mounts", list(mounts)},
		{"network", network},
		{"privileged", strconv.FormatBool(h.Privileged)},
		{"pid_mode", private(string(h.PidMode))},
		{"ipc_mode", private(string(h.IpcMode), "shareable")},
		{"uts_mode", private(string(h.UTSMode))},
		{"devices", list(devices)},
		{"cap_add", list(caps)},
	}
}

func mountString(source, target string, readOnly bool) string {
	if readOnly {
		return source + ":" + target + ":ro"
	}
	return source + ":" + target
}

// diffOptions names each option where job differs from sess.
func diffOptions(job, sess []optionField) []string {
	var diff []string
	for i := range job {
		if job[i].value != sess[i].value {
			diff = append(diff, fmt.Sprintf("%s: job %s, session %s", job[i].name, job[i].value, sess[i].value))
		}
	}
	return diff
}

// judgementTTL bounds how long HostAccess's verdict on a session job is
// kept for its Run (the worker runs a job right after judging it).
const judgementTTL = time.Hour

// judgements remembers, per attempt of a session job, whether HostAccess
// reported host access, so that Run can tell a job judged on its session
// container from one judged before that container existed.
type judgements struct {
	mu sync.Mutex
	m  map[attemptKey]judgement
}

type attemptKey struct {
	job     string
	attempt int
	worker  string
}

type judgement struct {
	hostAccess bool
	at         time.Time
}

func keyOf(spec backends.Spec) attemptKey { return attemptKey{spec.JobID, spec.Attempt, spec.Worker} }

// record keeps the verdict on spec, and forgets verdicts no Run took.
func (j *judgements) record(spec backends.Spec, hostAccess bool) {
	now := time.Now()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.m == nil {
		j.m = map[attemptKey]judgement{}
	}
	for k, v := range j.m {
		if now.Sub(v.at) > judgementTTL {
			delete(j.m, k)
		}
	}
	j.m[keyOf(spec)] = judgement{hostAccess: hostAccess, at: now}
}

// take returns and forgets the verdict on spec; ok is false if HostAccess
// did not judge it.
func (j *judgements) take(spec backends.Spec) (hostAccess, ok bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	v, ok := j.m[keyOf(spec)]
	delete(j.m, keyOf(spec))
	return v.hostAccess, ok
}
