package docker

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
)

// Every Linux capability is decided, in any case and with or without the
// CAP_ prefix; a name the table does not know is dangerous.
func TestCapabilityDecisions(t *testing.T) {
	t.Parallel()
	// The decisions, written out again: a change to the table must change
	// this list too.
	want := map[string]bool{
		"ALL": true,
		// Harmless.
		"CHOWN": false, "FOWNER": false, "FSETID": false, "SETUID": false, "SETGID": false, "KILL": false,
		"NET_BIND_SERVICE": false, "NET_BROADCAST": false, "SETPCAP": false, "SYS_CHROOT": false,
		"IPC_LOCK": false, "SYS_TTY_CONFIG": false,
		// Dangerous.
		"SYS_ADMIN": true, "SYS_MODULE": true, "SYS_RAWIO": true, "SYS_BOOT": true, "SYS_TIME": true,
		"SYS_RESOURCE": true, "SYS_PACCT": true, "SYS_NICE": true, "SYSLOG": true, "BPF": true, "PERFMON": true,
		"CHECKPOINT_RESTORE": true, "MAC_ADMIN": true, "MAC_OVERRIDE": true, "AUDIT_CONTROL": true,
		"AUDIT_READ": true, "AUDIT_WRITE": true, "WAKE_ALARM": true, "BLOCK_SUSPEND": true, "NET_ADMIN": true,
		"DAC_READ_SEARCH": true, "DAC_OVERRIDE": true, "LINUX_IMMUTABLE": true, "MKNOD": true, "SETFCAP": true,
		"LEASE": true, "NET_RAW": true, "IPC_OWNER": true, "SYS_PTRACE": true,
	}
	if got, exp := slices.Sorted(maps.Keys(capabilities)), slices.Sorted(maps.Keys(want)); !slices.Equal(got, exp) {
		t.Fatalf("capability table names %v,\nwant %v", got, exp)
	}
	if len(want) != 42 { // the 41 capabilities of Linux 6.x, and ALL
		t.Fatalf("%d capabilities decided, want 42", len(want))
	}
	for name, dangerous := range want {
		if capabilities[name].reach == "" {
			t.Errorf("%s: no reason given", name)
		}
		for _, form := range []string{name, strings.ToLower(name), "CAP_" + name, "cap_" + strings.ToLower(name), " Cap_" + name + " "} {
			got, rule := capDecision(form)
			if got != name || rule.dangerous != dangerous || rule.reach != capabilities[name].reach {
				t.Errorf("capDecision(%q) = %s %+v, want %s dangerous=%v", form, got, rule, name, dangerous)
			}
		}
	}
	for _, unknown := range []string{"SYS_ADMIN2", "cap_foo", "CAP_", "", "NET-ADMIN", "CAP_CAP_SYS_ADMIN"} {
		if _, rule := capDecision(unknown); !rule.dangerous || !strings.Contains(rule.reach, "not a capability sandrun knows") {
			t.Errorf("capDecision(%q) = %+v, want dangerous as unknown", unknown, rule)
		}
	}
}

// The capabilities a container holds — added back in any spelling, or
// kept from docker's defaults when not all are dropped — are judged once
// each.
func TestCapabilityReasons(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		add     []string
		drop    []string
		want    []string // one substring per reason
		wantNot string
	}{
		{"harmless added", []string{"CHOWN", "cap_setuid", "Kill"}, []string{"ALL"}, nil, ""},
		{"dangerous in every spelling, once", []string{"sys_admin", "CAP_SYS_ADMIN", "Cap_Sys_Admin"}, []string{"ALL"},
			[]string{"capability SYS_ADMIN added: mount, namespaces"}, ""},
		{"unknown", []string{"CAP_MADE_UP"}, []string{"all"},
			[]string{"capability MADE_UP added: not a capability sandrun knows"}, ""},
		{"all", []string{"all"}, []string{"ALL"}, []string{"capability ALL added"}, ""},
		{"drop ALL in CAP_ form", nil, []string{"CAP_ALL"}, nil, ""},
		{"defaults kept", nil, nil, []string{"DAC_OVERRIDE kept", "MKNOD kept", "NET_RAW kept", "SETFCAP kept", "AUDIT_WRITE kept"}, "CHOWN"},
		{"defaults partly dropped", nil, []string{"DAC_OVERRIDE", "cap_mknod", "NET_RAW", "SETFCAP"}, []string{"AUDIT_WRITE kept"}, "MKNOD"},
		{"added and kept named once", []string{"NET_RAW"}, nil, []string{"DAC_OVERRIDE kept", "MKNOD kept", "NET_RAW added", "SETFCAP kept", "AUDIT_WRITE kept"}, "NET_RAW kept"},
	}
	for _, tc := range cases {
		got := capabilityReasons(&container.HostConfig{CapAdd: tc.add, CapDrop: tc.drop})
		if len(got) != len(tc.want) {
			t.Errorf("%s: reasons %q, want %d like %q", tc.name, got, len(tc.want), tc.want)
			continue
		}
		all := strings.Join(got, "; ")
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: reasons %q, want one with %q", tc.name, got, w)
			}
		}
		if tc.wantNot != "" && strings.Contains(all, tc.wantNot) {
			t.Errorf("%s: reasons %q name %s", tc.name, got, tc.wantNot)
		}
	}
}

// hostAccessOf judges h with no volumes on the engine.
func hostAccessOf(t *testing.T, h *container.HostConfig) string {
	t.Helper()
	none := func(context.Context, string) (volumeInfo, bool, error) { return volumeInfo{}, false, nil }
	if h.CapDrop == nil {
		h.CapDrop = []string{"ALL"}
	}
	reasons, err := hostAccess(context.Background(), h, none, nil)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(reasons, "; ")
}

// Every namespace shared with the host or with another container is host
// access; a private one is not.
func TestHostAccessNamespaces(t *testing.T) {
	t.Parallel()
	set := map[string]func(h *container.HostConfig, mode string){
		"pid":     func(h *container.HostConfig, m string) { h.PidMode = container.PidMode(m) },
		"ipc":     func(h *container.HostConfig, m string) { h.IpcMode = container.IpcMode(m) },
		"uts":     func(h *container.HostConfig, m string) { h.UTSMode = container.UTSMode(m) },
		"network": func(h *container.HostConfig, m string) { h.NetworkMode = container.NetworkMode(m) },
		"user":    func(h *container.HostConfig, m string) { h.UsernsMode = container.UsernsMode(m) },
		"cgroup":  func(h *container.HostConfig, m string) { h.CgroupnsMode = container.CgroupnsMode(m) },
	}
	cases := []struct{ mode, want string }{
		{"host", "host %s namespace"},
		{"HOST", "host %s namespace"},
		{"container:abc", "%s namespace of another container (container:abc)"},
		{"container:0123456789ab0123456789ab", "%s namespace of another container (container:0123456789ab0123456789ab)"},
		{"Container:web", "%s namespace of another container (Container:web)"},
		{"container:", "%s namespace of another container (container:)"},
		{"", ""},
		{"private", ""},
	}
	for ns, apply := range set {
		for _, tc := range cases {
			h := &container.HostConfig{}
			apply(h, tc.mode)
			got := hostAccessOf(t, h)
			want := ""
			if tc.want != "" {
				want = strings.Replace(tc.want, "%s", ns, 1)
			}
			if got != want {
				t.Errorf("%s mode %q: host access %q, want %q", ns, tc.mode, got, want)
			}
		}
	}
	for _, tc := range []struct{ ns, mode string }{{"ipc", "shareable"}, {"ipc", "none"}, {"network", "none"}, {"network", "bridge"}, {"cgroup", "private"}} {
		h := &container.HostConfig{}
		set[tc.ns](h, tc.mode)
		if got := hostAccessOf(t, h); got != "" {
			t.Errorf("%s mode %q: host access %q, want none", tc.ns, tc.mode, got)
		}
	}
}

// What only an inspected configuration carries — Binds, VolumesFrom,
// device requests and rules — is judged like the rest.
func TestHostAccessInspectedForms(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		h    container.HostConfig
		want string
	}{
		{"binds host path", container.HostConfig{Binds: []string{"/:/host:ro,rslave"}}, "bind mount of host path /"},
		{"binds socket", container.HostConfig{Binds: []string{"/run/docker.sock:/s"}}, "docker socket mounted (/run/docker.sock)"},
		{"binds new volume", container.HostConfig{Binds: []string{"cache:/cache"}}, ""},
		{"binds anonymous volume", container.HostConfig{Binds: []string{"/data"}}, ""},
		{"volumes from", container.HostConfig{VolumesFrom: []string{"db:ro"}}, "volumes of another container (db:ro)"},
		{"device rule", container.HostConfig{Resources: container.Resources{DeviceCgroupRules: []string{"c 1:3 rwm"}}}, `device cgroup rule "c 1:3 rwm"`},
		{"device request", container.HostConfig{Resources: container.Resources{DeviceRequests: []container.DeviceRequest{{Driver: "nvidia"}}}}, `device request (driver "nvidia")`},
	}
	for _, tc := range cases {
		h := tc.h
		got := hostAccessOf(t, &h)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: host access %q, want %q", tc.name, got, tc.want)
		}
	}
}
