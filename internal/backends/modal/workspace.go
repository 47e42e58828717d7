package modal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	modal "github.com/modal-labs/modal-client/go"

	"github.com/sandrun/sandrun/internal/backends"
)

// WorkspaceDir is where a job's workspace volume is mounted in its sandbox.
const WorkspaceDir = "/workspace"

// workspacePrefix starts the names of workspace volumes.
const workspacePrefix = "sandrun-ws-"

// maxVolumeName bounds a volume's name. Modal takes names of up to 64
// characters (the SDK checks len <= 64; its message says "shorter than
// 64"): 63 satisfies both readings.
const maxVolumeName = 63

// volumeHashLen is how many hex digits of a digest end a hashed name.
const volumeHashLen = 20

// commitWait bounds the wait, after a workspace job, for its sandbox to
// have ended: Modal writes a sandbox's changes back to its volumes when
// the sandbox terminates, and the workspace's next job must see them.
const commitWait = 2 * time.Minute

// volumeNameRE is what workspaceVolume passes through unhashed: Modal's
// object-name characters, without the period.
var volumeNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// workspaceVolume is the name of the Modal Volume that holds workspace
// name of deployment: sandrun-ws-<deployment>-<name>, as docker names its
// volumes, when that is a valid name of at most maxVolumeName characters.
// Otherwise (too long, or holding other characters) it is the start of
// that name, other characters replaced by '_', then '-' and the first
// volumeHashLen hex digits of a SHA-256 of deployment and name: still
// readable, distinct for every pair, and at most maxVolumeName long.
func workspaceVolume(deployment, name string) string {
	full := workspacePrefix + deployment + "-" + name
	if len(full) <= maxVolumeName && volumeNameRE.MatchString(full) {
		return full
	}
	sum := sha256.Sum256([]byte(deployment + "\x00" + name))
	readable := strings.Map(func(r rune) rune {
		if r < 0x80 && volumeNameRE.MatchString(string(r)) {
			return r
		}
		return '_'
	}, full)
	if keep := maxVolumeName - 1 - volumeHashLen; len(readable) > keep {
		readable = readable[:keep]
	}
	return readable + "-" + hex.EncodeToString(sum[:])[:volumeHashLen]
}

// workdir is the exec's working directory for spec: with a workspace,
// WorkspaceDir unless Dir is absolute (a relative Dir is taken inside
// it); else Dir, empty meaning the sandbox's.
func workdir(spec backends.Spec) string {
	if spec.Workspace != "" && !path.IsAbs(spec.Dir) {
		return path.Join(WorkspaceDir, spec.Dir)
	}
	return spec.Dir
}

// mountWorkspace adds spec's workspace volume to params, mounted at
// WorkspaceDir: the named Volume, made on first use in the connection's
// environment. It is looked up for every job, not cached: another worker
// may have removed it since.
func (c *conn) mountWorkspace(ctx context.Context, spec backends.Spec, params *modal.SandboxCreateParams) error {
	if spec.Workspace == "" {
		return nil
	}
	name := workspaceVolume(spec.Deployment, spec.Workspace)
	vol, err := c.sdk.Volumes.FromName(ctx, name, &modal.VolumeFromNameParams{Environment: c.env, CreateIfMissing: true})
	if err != nil {
		return classify("workspace "+spec.Workspace+": volume "+name, err)
	}
	params.Volumes = map[string]*modal.Volume{WorkspaceDir: vol}
	return nil
}

// awaitEnd waits, within commitWait, for the terminated sandbox of a
// workspace job to have ended, so that its volume holds what the job
// wrote before the workspace's next job starts. A failure is only
// logged: the job has run, and running it again would not help.
func (b *Backend) awaitEnd(ctx context.Context, sb *modal.Sandbox) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitWait)
	defer cancel()
	if _, err := sb.Wait(ctx, nil); err != nil {
		b.cfg.Logger.Warn("modal: workspace sandbox did not end: the next job may not see all its changes", "sandbox", sb.SandboxID, "err", err)
	}
}

// RemoveWorkspace implements backends.WorkspaceRemover: it deletes the
// workspace's volume, if there is one.
func (b *Backend) RemoveWorkspace(ctx context.Context, deployment, name string) error {
	if name == "" {
		return fmt.Errorf("modal: remove workspace: no name: %w", backends.ErrPermanent)
	}
	c, err := b.connect(ctx)
	if err != nil {
		return err
	}
	vol := workspaceVolume(deployment, name)
	if err := c.sdk.Volumes.Delete(ctx, vol, &modal.VolumeDeleteParams{Environment: c.env, AllowMissing: true}); err != nil {
		return classify("remove workspace "+name+": volume "+vol, err)
	}
	return nil
}
