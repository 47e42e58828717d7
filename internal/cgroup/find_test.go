package cgroup

import (
	"errors"
	"strings"
	"testing"
)

// hybrid is this shape of host: cgroup v1 controllers, cgroup2 beside them.
const hybrid = `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

func TestOwnPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		noV2           bool
	}{
		{"hybrid", "9:name=systemd:/\n4:memory:/x/y\n0::/\n", "/", false},
		{"unified", "0::/system.slice/sandrun.service\n", "/system.slice/sandrun.service", false},
		{"v1 only", "4:memory:/x\n1:cpu:/\n", "", true},
		{"empty", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ownPath(strings.NewReader(tt.in))
			if tt.noV2 {
				if !errors.Is(err, ErrNoCgroup2) {
					t.Errorf("ownPath: %q, %v; want ErrNoCgroup2", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ownPath = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestDirOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, mountinfo, own, want string
		noV2                       bool
	}{
		{"hybrid, root cgroup", hybrid, "/", "/sys/fs/cgroup/unified", false},
		{"hybrid, nested", hybrid, "/a/b", "/sys/fs/cgroup/unified/a/b", false},
		{"unified", "25 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n", "/system.slice/w.service", "/sys/fs/cgroup/system.slice/w.service", false},
		{"bind-mounted subtree", "25 1 0:22 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "/kubepods/pod1/c1", "/sys/fs/cgroup/c1", false},
		{"subtree is the cgroup", "25 1 0:22 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "/kubepods/pod1", "/sys/fs/cgroup", false},
		{"sibling of the subtree", "25 1 0:22 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "/kubepods/pod10", "", true},
		{"optional fields and an escaped space", "25 1 0:22 / /mnt/cg\\0402 rw shared:9 master:1 - cgroup2 none rw\n", "/x", "/mnt/cg 2/x", false},
		{"outside the namespace", "25 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "/../../user.slice", "", true},
		{"no cgroup2 mount", "31 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n", "/", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mounts, err := cgroup2Mounts(strings.NewReader(tt.mountinfo))
			if err != nil {
				t.Fatal(err)
			}
			got, err := dirOf(tt.own, mounts)
			if tt.noV2 {
				if !errors.Is(err, ErrNoCgroup2) {
					t.Errorf("dirOf = %q, %v; want ErrNoCgroup2", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("dirOf = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
