package local

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// credential resolves Config.User: a user name, or UID:GID.
func credential(spec string) (*syscall.Credential, error) {
	if spec == "" {
		return nil, nil
	}
	var uid, gid uint64
	var err error
	if u, g, ok := strings.Cut(spec, ":"); ok {
		if uid, err = strconv.ParseUint(u, 10, 32); err == nil {
			gid, err = strconv.ParseUint(g, 10, 32)
		}
		if err != nil {
			return nil, fmt.Errorf("local: user %q: want a name or UID:GID", spec)
		}
	} else {
		acct, err := user.Lookup(spec)
		if err != nil {
			return nil, fmt.Errorf("local: user %q: %w", spec, err)
		}
		if uid, err = strconv.ParseUint(acct.Uid, 10, 32); err == nil {
			gid, err = strconv.ParseUint(acct.Gid, 10, 32)
		}
		if err != nil {
			return nil, fmt.Errorf("local: user %q: uid %s gid %s: %w", spec, acct.Uid, acct.Gid, err)
		}
	}
	if os.Geteuid() != 0 && uint64(os.Geteuid()) != uid {
		return nil, fmt.Errorf("local: user %q: running commands as another user needs a worker running as root", spec)
	}
	// No supplementary groups: the command gets the user's primary group
	// only, never the worker's.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}
