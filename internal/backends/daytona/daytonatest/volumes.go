package daytonatest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Volume states (the spec's VolumeState).
const (
	VolumePendingCreate = "pending_create"
	VolumeCreating      = "creating"
	VolumeReady         = "ready"
	VolumePendingDelete = "pending_delete"
	VolumeDeleting      = "deleting"
	VolumeDeleted       = "deleted"
	VolumeError         = "error"
)

// volumeJSON is the API's VolumeDto.
type volumeJSON struct {
	ID             string  `json:"id"`
	Name           string  `json:"name"`
	OrganizationID string  `json:"organizationId"`
	State          string  `json:"state"`
	CreatedAt      string  `json:"createdAt"`
	UpdatedAt      string  `json:"updatedAt"`
	LastUsedAt     *string `json:"lastUsedAt"`
	ErrorReason    *string `json:"errorReason"`
}

// SandboxVolume is the API's SandboxVolume: a volume (its ID or name) a
// sandbox mounts at MountPath.
type SandboxVolume struct {
	VolumeID  string `json:"volumeId"`
	MountPath string `json:"mountPath"`
	Subpath   string `json:"subpath,omitempty"`
}

// volume is a volume of the fake: its data is the directory dir.
type volume struct {
	dto   volumeJSON
	dir   string
	polls int // Reads while it is being made or deleted.
}

// mountPoint is a volume as a sandbox mounts it: at path in the sandbox,
// dir on the host.
type mountPoint struct {
	path, dir, volumeID string
}

// Volume describes a volume of the fake.
type Volume struct {
	ID, Name, State string
	// Dir holds the volume's files on the host; it is removed when the
	// volume is deleted.
	Dir string
}

// Volumes returns every volume, deleted ones included, in creation order.
func (f *Fake) Volumes() []Volume {
	f.mu.Lock()
	defer f.mu.Unlock()
	var list []Volume
	for _, v := range f.volumeList() {
		list = append(list, Volume{ID: v.dto.ID, Name: v.dto.Name, State: v.dto.State, Dir: v.dir})
	}
	return list
}

// SetVolumePolls sets how many reads a new volume takes to be ready, and
// a deleted one to be gone (default 2: one read shows creating, or
// deleting, the next ready, or deleted).
func (f *Fake) SetVolumePolls(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.volumePolls = n
}

// BreakVolume puts the volume named name in state error with reason, as
// a failed provisioning or deletion leaves it. It reports whether there
// was such a volume.
func (f *Fake) BreakVolume(name, reason string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.volumeByName(name)
	if v == nil {
		return false
	}
	v.set(VolumeError)
	v.dto.ErrorReason = &reason
	return true
}

// volumeList returns the volumes in creation order. f.mu is held.
func (f *Fake) volumeList() []*volume {
	list := make([]*volume, 0, len(f.volumes))
	for _, v := range f.volumes {
		list = append(list, v)
	}
	slices.SortFunc(list, func(a, b *volume) int {
		return cmp.Or(cmp.Compare(a.dto.CreatedAt, b.dto.CreatedAt), cmp.Compare(a.dto.ID, b.dto.ID))
	})
	return list
}

// volumeByName returns the volume named name that is not deleted, as the
// API finds one by name, or nil. f.mu is held.
func (f *Fake) volumeByName(name string) *volume {
	for _, v := range f.volumes {
		if v.dto.Name == name && v.dto.State != VolumeDeleted {
			return v
		}
	}
	return nil
}

// set moves v to state.
func (v *volume) set(state string) {
	v.dto.State = state
	v.dto.UpdatedAt = time.Now().UTC().Format(time.RFC3339Nano)
	v.polls = 0
}

// read is one read of v: a volume being made or deleted moves on, as the
// API's volume manager would have moved it meanwhile. f.mu is held.
func (f *Fake) read(v *volume) {
	switch v.dto.State {
	case VolumePendingCreate, VolumeCreating:
		v.polls++
		switch {
		case v.polls >= f.volumePolls:
			if err := os.MkdirAll(v.dir, 0o700); err != nil {
				reason := err.Error()
				v.set(VolumeError)
				v.dto.ErrorReason = &reason
				return
			}
			v.set(VolumeReady)
		case v.dto.State == VolumePendingCreate:
			polls := v.polls
			v.set(VolumeCreating)
			v.polls = polls
		}
	case VolumePendingDelete, VolumeDeleting:
		v.polls++
		switch {
		case v.polls >= f.volumePolls:
			if err := os.RemoveAll(v.dir); err != nil {
				reason := err.Error()
				v.set(VolumeError)
				v.dto.ErrorReason = &reason
				return
			}
			// The API renames a deleted volume, freeing its name, after
			// dropping an earlier deleted one of the same name.
			for id, old := range f.volumes {
				if old.dto.State == VolumeDeleted && old.dto.Name == v.dto.Name+"-deleted" {
					delete(f.volumes, id)
				}
			}
			v.dto.Name += "-deleted"
			v.set(VolumeDeleted)
		case v.dto.State == VolumePendingDelete:
			polls := v.polls
			v.set(VolumeDeleting)
			v.polls = polls
		}
	}
}

func (f *Fake) listVolumes(w http.ResponseWriter, r *http.Request) {
	withDeleted := r.URL.Query().Get("includeDeleted") == "true"
	f.mu.Lock()
	defer f.mu.Unlock()
	list := []volumeJSON{}
	for _, v := range f.volumeList() {
		if withDeleted || v.dto.State != VolumeDeleted {
			list = append(list, v.dto)
		}
	}
	writeJSON(w, http.StatusOK, list)
}

func (f *Fake) createVolume(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name *string `json:"name"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeMessage(w, http.StatusBadRequest, "invalid body: "+err.Error())
		return
	}
	if req.Name == nil {
		writeMessages(w, http.StatusBadRequest, "name must be a string")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now().UTC().Format(time.RFC3339Nano)
	v := &volume{dto: volumeJSON{ID: newID(), OrganizationID: "org-fake", State: VolumePendingCreate, CreatedAt: now, UpdatedAt: now}}
	v.dto.Name = cmp.Or(*req.Name, v.dto.ID)
	if f.volumeByName(v.dto.Name) != nil {
		writeMessage(w, http.StatusBadRequest, "Volume with name "+v.dto.Name+" already exists")
		return
	}
	v.dir = filepath.Join(f.root, "volumes", v.dto.ID)
	f.volumes[v.dto.ID] = v
	writeJSON(w, http.StatusOK, v.dto)
}

func (f *Fake) getVolume(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := r.PathValue("volumeId")
	v := f.volumes[id]
	if v == nil {
		writeMessage(w, http.StatusNotFound, "Volume with ID "+id+" not found")
		return
	}
	f.read(v)
	writeJSON(w, http.StatusOK, v.dto)
}

func (f *Fake) getVolumeByName(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := r.PathValue("name")
	v := f.volumeByName(name)
	if v == nil {
		writeMessage(w, http.StatusNotFound, "Volume with name "+name+" not found")
		return
	}
	f.read(v)
	if v.dto.State == VolumeDeleted { // Gone with this read.
		writeMessage(w, http.StatusNotFound, "Volume with name "+name+" not found")
		return
	}
	writeJSON(w, http.StatusOK, v.dto)
}

func (f *Fake) deleteVolume(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := r.PathValue("volumeId")
	v := f.volumes[id]
	if v == nil {
		writeMessage(w, http.StatusNotFound, "Volume with ID "+id+" not found")
		return
	}
	if v.dto.State != VolumeReady && v.dto.State != VolumeError {
		writeMessage(w, http.StatusBadRequest, "Volume must be in 'ready' or 'error' state in order to be deleted")
		return
	}
	for _, sid := range f.order {
		if sb := f.sandboxes[sid]; sb != nil && slices.ContainsFunc(sb.mounts, func(m mountPoint) bool { return m.volumeID == id }) {
			writeMessage(w, http.StatusConflict, "Volume cannot be deleted because it is in use by one or more sandboxes (e.g. "+sb.dto.Name+")")
			return
		}
	}
	v.set(VolumePendingDelete)
	v.dto.ErrorReason = nil
	w.WriteHeader(http.StatusOK)
}

// mountVolumes checks a create request's volumes as the API does (each
// exists and is ready; mount paths and subpaths are safe) and returns
// where the sandbox mounts them, and the volumes with their IDs. On
// failure it returns the status and message to answer. f.mu is held.
func (f *Fake) mountVolumes(reqs []SandboxVolume) ([]mountPoint, []SandboxVolume, int, string) {
	var resolved []*volume
	for _, req := range reqs {
		v := f.volumes[req.VolumeID]
		if v == nil || v.dto.State == VolumeDeleted {
			v = f.volumeByName(req.VolumeID)
		}
		if v == nil {
			return nil, nil, http.StatusNotFound, "Volume '" + req.VolumeID + "' not found"
		}
		resolved = append(resolved, v)
	}
	for _, v := range resolved {
		if v.dto.State != VolumeReady {
			return nil, nil, http.StatusBadRequest, fmt.Sprintf("Volume '%s' is not in a ready state. Current state: %s", v.dto.Name, v.dto.State)
		}
	}
	var errs []string
	for _, req := range reqs {
		if msg := mountPathError(req.MountPath); msg != "" {
			errs = append(errs, msg)
		}
	}
	if len(errs) > 0 {
		return nil, nil, http.StatusBadRequest, strings.Join(errs, ", ")
	}
	for _, req := range reqs {
		if msg := subpathError(req.Subpath); msg != "" {
			errs = append(errs, msg)
		}
	}
	if len(errs) > 0 {
		return nil, nil, http.StatusBadRequest, strings.Join(errs, ", ")
	}
	var mounts []mountPoint
	var public []SandboxVolume
	now := time.Now().UTC().Format(time.RFC3339Nano)
	for i, req := range reqs {
		v := resolved[i]
		dir := v.dir
		if req.Subpath != "" {
			dir = filepath.Join(dir, filepath.FromSlash(req.Subpath))
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, nil, http.StatusInternalServerError, err.Error()
			}
		}
		mounts = append(mounts, mountPoint{path: path.Clean(req.MountPath), dir: dir, volumeID: v.dto.ID})
		public = append(public, SandboxVolume{VolumeID: v.dto.ID, MountPath: req.MountPath, Subpath: req.Subpath})
		v.dto.LastUsedAt = &now
	}
	return mounts, public, 0, ""
}

// mountPathError is the API's objection to a volume's mount path, or "".
func mountPathError(p string) string {
	switch {
	case !strings.HasPrefix(p, "/"):
		return "Invalid mount path " + p + " (must be absolute)"
	case p == "/" || p == "//":
		return "Invalid mount path " + p + " (cannot mount to the root directory)"
	case strings.Contains(p, "/../") || strings.Contains(p, "/./") || strings.HasSuffix(p, "/..") || strings.HasSuffix(p, "/."):
		return "Invalid mount path " + p + " (cannot contain relative path components)"
	case strings.Contains(p[1:], "//"):
		return "Invalid mount path " + p + " (cannot contain consecutive slashes)"
	}
	for _, sys := range []string{"/proc", "/sys", "/dev", "/boot", "/etc", "/bin", "/sbin", "/lib", "/lib64"} {
		if p == sys || strings.HasPrefix(p, sys+"/") {
			return "Invalid mount path " + p + " (cannot mount to system directory)"
		}
	}
	return ""
}

// subpathError is the API's objection to a volume's subpath, or "".
func subpathError(s string) string {
	switch {
	case s == "":
		return ""
	case strings.HasPrefix(s, "/"):
		return `Invalid subpath "` + s + `" (S3 key prefixes cannot start with /)`
	case strings.Contains(s, ".."):
		return `Invalid subpath "` + s + `" (cannot contain .. for security)`
	case strings.Contains(s, "//"):
		return `Invalid subpath "` + s + `" (cannot contain consecutive slashes)`
	}
	return ""
}

// hostPath is where path p of sb is on the host: in the volume mounted
// over it, else p itself (the fake's sandboxes see the host's files).
func (sb *sandbox) hostPath(p string) string {
	p = path.Clean(p)
	best := -1
	for i, m := range sb.mounts {
		if (p == m.path || strings.HasPrefix(p, m.path+"/")) && (best < 0 || len(m.path) > len(sb.mounts[best].path)) {
			best = i
		}
	}
	if best < 0 {
		return p
	}
	m := sb.mounts[best]
	return filepath.Join(m.dir, filepath.FromSlash(strings.TrimPrefix(p, m.path)))
}

// writeMessages answers a validation error the way the control plane
// (NestJS's ValidationPipe) does: the messages in a list.
func writeMessages(w http.ResponseWriter, status int, msgs ...string) {
	writeJSON(w, status, map[string]any{"statusCode": status, "message": msgs, "error": http.StatusText(status)})
}
