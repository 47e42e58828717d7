package docker

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/backends"
)

// WorkspaceDir is where a job's workspace is mounted in its container.
const WorkspaceDir = "/workspace"

// workspacePrefix starts the names of workspace volumes; a job may not
// mount one by name (it would reach another owner's workspace).
const workspacePrefix = "sandrun-ws-"

// LabelWorkspace is on every workspace volume.
const LabelWorkspace = "io.sandrun.workspace"

// workspaceVolume is the named volume that holds workspace name.
func workspaceVolume(deployment, name string) string {
	return workspacePrefix + deployment + "-" + name
}

// mountWorkspace mounts spec's workspace at WorkspaceDir and makes it the
// working directory (a relative Dir is taken inside it).
func mountWorkspace(spec backends.Spec, cfg *container.Config, host *container.HostConfig) {
	if spec.Workspace == "" {
		return
	}
	// NoCopy: docker would otherwise copy the directory it makes for the
	// working directory (root's) over the empty volume's, ownership and all.
	host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeVolume, Source: workspaceVolume(spec.Deployment, spec.Workspace), Target: WorkspaceDir,
		VolumeOptions: &mount.VolumeOptions{NoCopy: true}})
	if !path.IsAbs(spec.Dir) {
		cfg.WorkingDir = path.Join(WorkspaceDir, spec.Dir)
	}
}

// ensureWorkspace makes spec's workspace volume on first use, labelled,
// and gives it to the profile's user (a new volume is root's): a short
// container of the job's image runs chown as root, with nothing but the
// CHOWN capability and no network.
func (d *Docker) ensureWorkspace(ctx context.Context, spec backends.Spec, image string) error {
	if spec.Workspace == "" {
		return nil
	}
	name := workspaceVolume(spec.Deployment, spec.Workspace)
	if _, err := d.api.VolumeInspect(ctx, name, client.VolumeInspectOptions{}); err == nil {
		return nil
	} else if !isNotFound(err) {
		return fmt.Errorf("workspace volume %s: %w: %w", name, err, backends.ErrUnavailable)
	}
	if _, err := d.api.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Driver: "local",
		Labels: map[string]string{LabelManaged: "true", LabelDeploy: spec.Deployment, LabelWorkspace: spec.Workspace}}); err != nil {
		return fmt.Errorf("workspace volume %s: create: %w: %w", name, err, backends.ErrUnavailable)
	}
	if u := d.cfg.User; u == "0" || u == "root" || strings.HasPrefix(u, "0:") {
		return nil
	}
	init := false
	created, err := d.api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: image, User: "0:0", Cmd: []string{"chown", d.cfg.User, WorkspaceDir},
			Labels: map[string]string{LabelManaged: "true", LabelDeploy: spec.Deployment, LabelJob: spec.JobID,
				LabelAttempt: fmt.Sprint(spec.Attempt), LabelWorker: spec.Worker}},
		HostConfig: &container.HostConfig{Init: &init, NetworkMode: "none", CapDrop: []string{"ALL"}, CapAdd: []string{"CHOWN"},
			SecurityOpt: []string{"no-new-privileges"},
			Mounts:      []mount.Mount{{Type: mount.TypeVolume, Source: name, Target: WorkspaceDir, VolumeOptions: &mount.VolumeOptions{NoCopy: true}}}},
	})
	if err != nil {
		return fmt.Errorf("workspace volume %s: prepare: %w: %w", name, err, backends.ErrUnavailable)
	}
	defer func() {
		_, _ = d.api.ContainerRemove(context.WithoutCancel(ctx), created.ID, client.ContainerRemoveOptions{Force: true})
	}()
	if _, err := d.api.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("workspace volume %s: prepare: %w: %w", name, err, backends.ErrUnavailable)
	}
	wait := d.api.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case r := <-wait.Result:
		if r.StatusCode != 0 {
			return fmt.Errorf("workspace volume %s: chown %s in image %s exited %d: %w", name, d.cfg.User, image, r.StatusCode, backends.ErrPermanent)
		}
	case err := <-wait.Error:
		return fmt.Errorf("workspace volume %s: prepare: %w: %w", name, err, backends.ErrUnavailable)
	}
	return nil
}

// RemoveWorkspace implements backends.WorkspaceRemover: it removes the
// workspace's volume (on this profile's engine), if there is one.
func (d *Docker) RemoveWorkspace(ctx context.Context, deployment, name string) error {
	_, err := d.api.VolumeRemove(ctx, workspaceVolume(deployment, name), client.VolumeRemoveOptions{Force: true})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("docker: remove workspace %s: %w", name, err)
	}
	return nil
}
