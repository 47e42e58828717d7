package app

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// profileKeys are the keys each backend kind reads from a profile, besides
// kind and forward_env. A profile is decoded into one struct for every
// kind, so a key of another kind (port: on a docker profile) would be
// decoded and then silently ignored: checkProfileKeys refuses it instead.
var profileKeys = map[string][]string{
	"local": {"shell", "base_env", "user", "cgroup", "cgroup_parent", "workspace_root"},
	"docker": {"host", "image", "user", "network", "memory_bytes", "nano_cpus", "pids_limit", "cap_add", "read_only_root",
		"allow_host_access", "allowed_volume_drivers", "session_idle", "pull", "allowed_images", "volumes", "shm_size",
		"tmp_size", "disk_bytes"},
	"ssh": {"host", "port", "user", "identity_files", "certificate_files", "passphrase_env", "passphrase_file", "agent",
		"agent_socket", "known_hosts", "host_key_policy", "hash_known_hosts", "proxy_jump", "ssh_config", "run_root",
		"on_orphan", "max_sessions", "keepalive_interval", "keepalive_count_max", "connect_timeout", "reconnect_timeout",
		"keep_failed", "poll_interval", "watchdog_margin"},
	"singularity": {"binary", "image", "scratch", "network", "writable_tmpfs", "binds", "pwd", "fakeroot",
		"allow_host_access", "cache_max_bytes", "cache_max_images", "cache_max_age", "pull_timeout"},
	"modal":   {"modal"},
	"daytona": {"daytona"},
	"vercel":  {"vercel"},
	"plugin":  {"plugin"},
}

// commonProfileKeys are read for every kind.
var commonProfileKeys = []string{"kind", "forward_env"}

// checkProfileKeys refuses, in the profile named name (a YAML mapping),
// every key its kind does not read, naming its path and the kinds that do.
// An unknown kind is left to NewBackend's error.
func checkProfileKeys(name string, profile *yaml.Node) error {
	if profile == nil || profile.Kind != yaml.MappingNode {
		return nil
	}
	kind := ""
	for i := 0; i+1 < len(profile.Content); i += 2 {
		if profile.Content[i].Value == "kind" {
			kind = profile.Content[i+1].Value
		}
	}
	if kind == "apptainer" {
		kind = "singularity"
	}
	allowed, known := profileKeys[kind]
	if !known {
		return nil
	}
	for i := 0; i+1 < len(profile.Content); i += 2 {
		key := profile.Content[i].Value
		if slices.Contains(allowed, key) || slices.Contains(commonProfileKeys, key) {
			continue
		}
		var owners []string
		for _, k := range []string{"local", "docker", "ssh", "singularity", "modal", "daytona", "vercel", "plugin"} {
			if slices.Contains(profileKeys[k], key) {
				owners = append(owners, k)
			}
		}
		if len(owners) == 0 {
			continue // unknown everywhere: the strict decoder names it
		}
		return fmt.Errorf("backends.%s.%s (line %d): not an option of kind %s (it is one of %s); remove it or change the kind",
			name, key, profile.Content[i].Line, kind, strings.Join(owners, ", "))
	}
	return nil
}

// checkFileProfileKeys runs checkProfileKeys on every profile of a config
// file's YAML, returning the errors by profile name.
func checkFileProfileKeys(data []byte) map[string]error {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	root := doc.Content[0]
	bad := map[string]error{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "backends" || root.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		profiles := root.Content[i+1]
		for j := 0; j+1 < len(profiles.Content); j += 2 {
			if err := checkProfileKeys(profiles.Content[j].Value, profiles.Content[j+1]); err != nil {
				bad[profiles.Content[j].Value] = err
			}
		}
	}
	return bad
}
