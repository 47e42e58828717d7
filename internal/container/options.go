// Package container holds a job spec's container options: the part of the
// job model that container backends read. It sits below both, so the job
// model names no backend type.
package container

// Options ask a container backend for an image, mounts, network or more;
// whatever reaches the host makes the job host access (refused unless the
// backend profile allows it).
type Options struct {
	// Image replaces the profile's image, where the backend allows it
	// (singularity: a docker://, oras://, library:// reference or an
	// absolute .sif path).
	Image string `json:"image,omitempty"`
	// Mounts are "SOURCE:TARGET[:ro]": SOURCE is a host path (absolute,
	// ~, ., ..) for a bind mount, else a named volume.
	Mounts []string `json:"mounts,omitempty"`
	// Network mode: "none" (default), "bridge", "host", ...
	Network string `json:"network,omitempty"`
	// Privileged, PidMode/IpcMode/UTSMode ("host" shares the host's),
	// Devices ("/dev/x[:/dev/y]") and CapAdd widen the container.
	Privileged bool     `json:"privileged,omitempty"`
	PidMode    string   `json:"pid_mode,omitempty"`
	IpcMode    string   `json:"ipc_mode,omitempty"`
	UTSMode    string   `json:"uts_mode,omitempty"`
	Devices    []string `json:"devices,omitempty"`
	CapAdd     []string `json:"cap_add,omitempty"`
}

// Fields returns the JSON names of the options o sets, in declaration
// order: what a job asks of its backend's containers.
func (o *Options) Fields() []string {
	if o == nil {
		return nil
	}
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"image", o.Image != ""}, {"mounts", len(o.Mounts) > 0}, {"network", o.Network != ""},
		{"privileged", o.Privileged}, {"pid_mode", o.PidMode != ""}, {"ipc_mode", o.IpcMode != ""},
		{"uts_mode", o.UTSMode != ""}, {"devices", len(o.Devices) > 0}, {"cap_add", len(o.CapAdd) > 0},
	} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// AllFields are the JSON names of every option, for backends that honour
// them all.
var AllFields = []string{"image", "mounts", "network", "privileged", "pid_mode", "ipc_mode", "uts_mode", "devices", "cap_add"}
