package docker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/container"
)

// capRule is the decision on one capability a container may hold after
// all are dropped: a dangerous one is host access.
type capRule struct {
	dangerous bool
	// reach says what the capability reaches beyond the container, or why
	// it stays inside it.
	reach string
}

// capabilities decides every Linux capability, by its name without CAP_.
// The test is: does it reach the host's kernel or hardware, host-wide
// state (clock, logs, audit, scheduling, suspend), or what the host and
// other containers share with the job (volumes, networks, namespaces)?
// A name missing here is refused as unknown (see capDecision).
var capabilities = map[string]capRule{
	"ALL": {true, "every capability, SYS_ADMIN included"},

	// Harmless: confined to the container's own files, processes and
	// namespaces. Host paths and shared namespaces are flagged on their own.
	"CHOWN":            {false, "changes owners of the container's own files"},
	"FOWNER":           {false, "bypasses owner checks on the container's own files"},
	"FSETID":           {false, "keeps set-user-ID bits on files it modifies"},
	"SETUID":           {false, "switches user IDs of the container's processes"},
	"SETGID":           {false, "switches group IDs of the container's processes"},
	"KILL":             {false, "signals processes of the container's own PID namespace"},
	"NET_BIND_SERVICE": {false, "binds ports below 1024 in the container's network namespace"},
	"NET_BROADCAST":    {false, "unused by the kernel: broadcast sockets need no capability"},
	"SETPCAP":          {false, "moves capabilities only within the container's bounding set"},
	"SYS_CHROOT":       {false, "chroot inside the container's filesystem"},
	"IPC_LOCK":         {false, "locks memory that stays charged to the container's memory limit"},
	"SYS_TTY_CONFIG":   {false, "terminal ioctls on terminals the container can open (host devices are flagged)"},

	// Dangerous: the kernel, hardware or host-wide state.
	"SYS_ADMIN":          {true, "mount, namespaces and most admin syscalls: the classic container escape"},
	"SYS_MODULE":         {true, "loads modules into the host's kernel"},
	"SYS_RAWIO":          {true, "raw I/O ports and memory of the host's hardware"},
	"SYS_BOOT":           {true, "reboots the host or kexecs a new kernel on it"},
	"SYS_TIME":           {true, "sets the host's clock (time is not namespaced)"},
	"SYS_RESOURCE":       {true, "overrides limits the host shares: reserved filesystem blocks, quotas, kernel queues"},
	"SYS_PACCT":          {true, "switches process accounting of the whole host"},
	"SYS_NICE":           {true, "real-time scheduling that starves the host's CPUs; moves other processes' pages"},
	"SYSLOG":             {true, "reads and clears the host's kernel log (kernel addresses included)"},
	"BPF":                {true, "loads BPF programs into the host's kernel"},
	"PERFMON":            {true, "system-wide performance monitoring of the host's kernel and processes"},
	"CHECKPOINT_RESTORE": {true, "picks PIDs and reads other processes' memory mappings"},
	"MAC_ADMIN":          {true, "changes the host's mandatory access control policy (AppArmor, SELinux)"},
	"MAC_OVERRIDE":       {true, "overrides the host's mandatory access control"},
	"AUDIT_CONTROL":      {true, "configures the host's kernel auditing"},
	"AUDIT_READ":         {true, "reads the host's kernel audit log"},
	"AUDIT_WRITE":        {true, "writes records into the host's kernel audit log"},
	"WAKE_ALARM":         {true, "sets alarms that wake the host from suspend"},
	"BLOCK_SUSPEND":      {true, "keeps the host from suspending"},
	"NET_ADMIN":          {true, "configures interfaces, routes and firewalls (the host's with its network) and much kernel surface"},

	// Dangerous: what the host and other containers share with the job.
	"DAC_READ_SEARCH": {true, "open_by_handle_at reads any file of the host's filesystems"},
	"DAC_OVERRIDE":    {true, "bypasses file permissions on shared volumes, whoever owns the files"},
	"LINUX_IMMUTABLE": {true, "sets immutable and append-only flags that persist on shared volumes"},
	"MKNOD":           {true, "creates device nodes, usable by the host or other containers from shared volumes"},
	"SETFCAP":         {true, "sets file capabilities: a binary left on a shared volume runs privileged elsewhere"},
	"LEASE":           {true, "takes leases that stall other containers' and the host's opens of shared files"},
	"NET_RAW":         {true, "raw packets: spoofs ARP and DNS to other containers on its network"},
	"IPC_OWNER":       {true, "bypasses permissions on System V IPC objects, the host's in a shared IPC namespace"},
	"SYS_PTRACE":      {true, "traces and injects into processes, the host's or other containers' in a shared PID namespace"},
}

// dockerDefaultCaps are the capabilities docker grants a container that
// does not drop ALL.
var dockerDefaultCaps = []string{"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID",
	"SETUID", "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE"}

// capName normalises a capability name: any case, CAP_ prefix optional.
func capName(c string) string {
	return strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(c)), "CAP_")
}

// capDecision decides the capability c (any case, CAP_ prefix optional).
// An unknown name is dangerous: the engine may know a capability this
// table does not, and it fails closed.
func capDecision(c string) (name string, rule capRule) {
	name = capName(c)
	if r, ok := capabilities[name]; ok {
		return name, r
	}
	return name, capRule{true, "not a capability sandrun knows, refused as unknown"}
}

// capabilityReasons names each dangerous capability h's container holds:
// added back, or kept from docker's defaults when not all are dropped.
func capabilityReasons(h *container.HostConfig) []string {
	var reasons []string
	seen := map[string]bool{}
	for _, c := range h.CapAdd {
		name, rule := capDecision(c)
		if rule.dangerous && !seen[name] {
			seen[name] = true
			reasons = append(reasons, fmt.Sprintf("capability %s added: %s", name, rule.reach))
		}
	}
	dropped := func(name string) bool {
		return slices.ContainsFunc(h.CapDrop, func(c string) bool { n := capName(c); return n == name || n == "ALL" })
	}
	for _, name := range dockerDefaultCaps {
		if rule := capabilities[name]; rule.dangerous && !dropped(name) && !seen[name] {
			seen[name] = true
			reasons = append(reasons, fmt.Sprintf("capability %s kept from docker's defaults (not dropped): %s", name, rule.reach))
		}
	}
	return reasons
}
