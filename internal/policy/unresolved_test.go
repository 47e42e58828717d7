package policy

import "testing"

// TestUnresolvedOperands: a destructive operand the detector cannot
// resolve fails closed unless its fixed end keeps it off every protected
// root; a variable of the worker's own environment is read as empty.
func TestUnresolvedOperands(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		// the examples
		{`rm -rf "$(dirname /etc)"`, ruleRmRoot},
		{`rm -rf $(realpath /)`, ruleRmRoot},
		{`x=/usr/; rm -rf ${x%/}`, ruleRmRoot},
		{`while read d; do rm -rf "$d"; done < list`, ruleRmRoot},
		{`set -- /usr; rm -rf "$1"`, ruleRmRoot},
		// computed by the script: any value
		{`d=$(cat dirs.txt); rm -rf "$d"`, ruleRmRoot},
		{`rm -rf "$(echo /usr)/"`, ruleRmRoot},
		{`rm -rf "$(head -1 list)"/*`, ruleRmRoot},
		{`rm -rf "$(cat x)/lib64"`, ruleRmRoot},
		{`rm -rf "$(cat x)/e*"`, ruleRmRoot},
		{`rm -rf "$(cat x)/."`, ruleRmRoot},
		{`rm -rf "/$(cat x)"`, ruleRmRoot},
		{`cat dirs | xargs rm -rf`, ruleRmRoot},
		{`cat dirs | xargs -I{} rm -rf {}`, ruleRmRoot},
		{`find "$(cat root)" -delete`, ruleRmRoot},
		{`rsync -a --delete src/ "$(cat dest)"`, ruleRmRoot},
		{`chmod -R 777 "$(cat d)"`, ruleChmodSystem},
		{`chown -R nobody $(cat d)`, ruleChmodSystem},
		{`dd if=/dev/zero of="$(cat dev)"`, ruleDDDevice},
		{`dd if=/dev/zero of=/dev/$(cat d)`, ruleDDDevice},
		{`dd if=/dev/zero $(cat args)`, ruleDDDevice},
		{`shred "$(cat d)"`, ruleDDDevice},
		{`mkfs.ext4 "$(cat d)"`, ruleMkfs},
		// the worker's environment: empty when unset
		{`rm -rf "$DIR/"*`, ruleRmRoot},
		{`rm -rf "$PREFIX/usr"`, ruleRmRoot},
		{`rm -rf "$DIR"/`, ruleRmRoot},
		{`chmod -R 755 "$ROOT/etc"`, ruleChmodSystem},
		{`dd if=x of="$DEVDIR/sda"`, ""}, // /sda when empty; the operator's value is trusted
		// safe forms
		{`rm -rf "$DIR"`, ""},
		{`rm -rf "${BUILD_DIR:?}/"*`, ""},
		{`rm -rf "${OUT:-build}"`, ""},
		{`rm -rf "$TMPDIR/cache"`, ""},
		{`rm -rf "$(cat x)/build"`, ""},
		{`rm -rf "$(git rev-parse --show-toplevel)/dist"`, ""},
		{`rm -rf "$(cat x)"/*.o`, ""},
		{`d=$(mktemp -d); trap 'rm -rf "$d"' EXIT; touch "$d/x"`, ""},
		{`rm -rf "$(mktemp -d)"`, ""},
		{`rm -rf /tmp/build-$$`, ""},
		{`rm -rf "/tmp/run-$RANDOM"`, ""},
		{`rm -f "$(cat x)"`, ""},
		{`chmod 644 "$(cat f)"`, ""},
		{`dd if=/dev/zero of="$OUT/disk.img" bs=1M count=8`, ""},
		{`dd if=/dev/zero of="$(cat x)/disk.img" bs=1M count=8`, ""},
		{`for f in *.log; do rm -f "$f"; done`, ""},
		{`find . -type d -name __pycache__ | xargs rm -rf`, ""},
		{`git ls-files -z | xargs -0 grep -l TODO`, ""},
		{`ls | xargs rm -rf`, ""},
		// cwd matters where the operand is relative
		{`cd / && rm -rf "$(pwd)"`, ruleRmRoot},
		{`cd / && ls | xargs rm -rf`, ruleRmRoot},
		{`rm -rf /$RANDOM`, ruleRmRoot},
	})
}

// TestProgramCopies: a copy of a program under another name runs that
// program.
func TestProgramCopies(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		{`cp /bin/rm /tmp/x; /tmp/x -rf /usr`, ruleRmRoot},
		{`ln -s /bin/rm /tmp/x; /tmp/x -rf /usr`, ruleRmRoot},
		{`ln /bin/rm x && ./x -rf /usr`, ruleRmRoot},
		{`cp /bin/rm ./x; ./x -rf /usr`, ruleRmRoot},
		{`cp /bin/rm /tmp/; /tmp/rm -rf /usr`, ruleRmRoot},
		{`install -m755 /bin/rm ~/bin/del; PATH=~/bin:$PATH; del -rf /usr`, ruleRmRoot},
		{`cp /sbin/mkfs.ext4 f; ./f /dev/sda`, ruleMkfs},
		{`cp /bin/sh ./s; ./s -c "rm -rf /"`, ruleRmRoot},
		{`mv /tmp/dl/rm ./r; ./r -rf /etc`, ruleRmRoot},
		{`cp "$(command -v rm)" x; ./x -rf /usr`, ruleRmRoot}, // command -v prints rm
		{`cat /bin/rm > x; chmod +x x; ./x -rf /usr`, ruleUnresolved},
		{`cp build/app dist/app; ./dist/app --version`, ""},
		{`ln -s /usr/bin/python3 py; ./py -c "print(1)"`, ""},
		{`cp -r src dist; ls dist`, ""},
		{`echo hi > x; ./x`, ""},
	})
}

// TestEverydayCommands are the benign commands the issue names, with
// dangerous look-alikes that must stay refused.
func TestEverydayCommands(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		{`find ~ -name '*.tmp' -delete`, ""},
		{`find . -name node_modules -type d -prune -exec rm -rf {} +`, ""},
		{`find "$DIR" -name '*.o' -delete`, ""},
		{`find ~ -delete`, ruleRmRoot},
		{`find ~ -name '*' -delete`, ruleRmRoot},
		{`find ~ -name x -o -delete`, ruleRmRoot},
		{`find ~ ! -name keep -delete`, ruleRmRoot},
		{`find / -name '*.pyc' -delete`, ruleWriteSystem},
		{`find ~ -name '.*_history' -delete`, ruleHistoryWipe},
		{`mkfs.ext4 -F ./disk.img`, ""},
		{`truncate -s 64M fs.img && mkfs.ext4 -q fs.img`, ""},
		{`mkswap swapfile`, ""},
		{`mkfs.vfat -C fat.img 1440`, ""},
		{`mkfs.ext4 /dev/sdb1`, ruleMkfs},
		{`cd /dev && mkfs.ext4 sda`, ruleMkfs},
		{`cd "$(cat d)" && mkfs.ext4 sda`, ruleMkfs},
		{`ln -s /dev/sda d.img; mkfs.ext4 d.img`, ruleMkfs},
		{`ln -s /dev d; mkfs.ext4 d/sda`, ruleMkfs},
		{`mkfs.ext4 /proc/self/root/dev/sda`, ruleMkfs},
		{`kill -HUP 1`, ""},
		{`kill -s USR1 1`, ""},
		{`kill -0 -1`, ""},
		{`kill -1 1`, ""}, // signal 1 is HUP
		{`kill 1`, ruleKillAll},
		{`kill -9 1`, ruleKillAll},
		{`kill -HUP -1`, ruleKillAll},
		{`kill -sKILL -1`, ruleKillAll},
		{`kill -n 9 1`, ruleKillAll},
		{`kill "$SIG" 1`, ruleKillAll},
		{`sqlite3 :memory: 'select 1'`, ""},
		{`bash -n script.sh`, ""},
		{`sudo ls /root`, ""},
		{`sudo cat /var/log/syslog`, ""},
		{`sudo journalctl -u nginx --since today`, ""},
		{`sudo systemctl status nginx`, ""},
		{`sudo iptables -L -n`, ""},
		{`sudo find /var/log -name '*.gz'`, ""},
		{`sudo tail -n 100 /var/log/nginx/error.log`, ""},
		{`sudo du -sh /var/lib/docker`, ""},
		{`sudo ss -tlnp`, ""},
		{`sudo dmesg`, ""},
		{`sudo ip addr`, ""},
		{`sudo ufw status verbose`, ""},
		{`sudo -l`, ""},
		{`sudo -n -l | head -20`, ""},
		{`sudo -k`, ""},
		{`sudo -s`, rulePrivilege},
		{`sudo -l ls`, rulePrivilege},
		{`sudo -e /etc/hosts`, rulePrivilege},
		// eval of a tool that prints only its environment's assignments
		{`eval "$(ssh-agent -s)" && ssh-add -l`, ""},
		{`eval "$(pyenv init -)"`, ""},
		{`eval "$(/opt/homebrew/bin/brew shellenv)"`, ""},
		{`eval "$(ssh-agent -s; rm -rf ~)"`, ruleRmRoot},
		{`eval "$(ssh-agent -s) $X"`, ruleUnresolved},
		{`eval "$(ssh-agentx -s)"`, ruleUnresolved},
		// ... unless the name may be something else the script made
		{`ssh-agent() { echo 'rm -rf ~'; }; eval "$(ssh-agent -s)"`, ruleUnresolved},
		{"alias ssh-agent='echo rm -rf ~'\neval \"$(ssh-agent -s)\"", ruleUnresolved},
		{`PATH=/tmp/x:$PATH; eval "$(ssh-agent -s)"`, ruleUnresolved},
		{`printf 'echo rm -rf ~' > ~/bin/ssh-agent; eval "$(ssh-agent -s)"`, ruleUnresolved},
		{`cp /tmp/evil /usr/local/bin/ssh-agent; eval "$(ssh-agent -s)"`, ruleUnresolved},
		{`sudo launchctl print system/com.example.agent`, ""},
		{`sudo tmutil listbackups`, ""},
		{`sudo kubectl --kubeconfig /etc/rancher/k3s/k3s.yaml -n kube-system get pods`, ""},
		{`sudo docker ps -a`, ""},
		{`sudo ufw disable`, rulePrivilege},
		{`sudo launchctl bootout system/com.example.agent`, rulePrivilege},
		{`sudo kubectl -n prod exec web-0 -- sh`, rulePrivilege},
		{`sudo docker run --rm alpine true`, rulePrivilege},
		{`sudo cat /etc/shadow`, rulePrivilege},
		{`sudo cat ~/.ssh/id_rsa`, rulePrivilege},
		{`sudo grep -r pass /etc`, rulePrivilege},
		{`sudo cat "$F"`, rulePrivilege},
		{`sudo journalctl --vacuum-time=1d`, rulePrivilege},
		{`sudo systemctl stop nginx`, ruleServiceStop},
		{`sudo iptables -F`, ruleFirewallFlush},
		{`sudo find / -exec chmod 777 {} +`, rulePrivilege},
		{`sudo dmesg -c`, rulePrivilege},
		{`sudo ip link set eth0 down`, rulePrivilege},
		{`sudo -iu postgres psql`, rulePrivilege}, // a login shell runs the account's start-up files
		{`sudo bash`, rulePrivilege},
	})
}

// TestInlineInterpolation: a value interpolated into interpreter code's
// command string is the code's, not the shell's: unknown and chosen by the
// code's author.
func TestInlineInterpolation(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		{`perl -e 'system("rm -rf $d")'`, ruleRmRoot},
		{`perl -e 'system("rm -rf @dirs")'`, ruleRmRoot},
		{"perl -e '`rm -rf $d`'", ruleRmRoot},
		{`perl -e 'system(qq{rm -rf $d})'`, ruleRmRoot},
		{`ruby -e 'system("rm -rf #{d}")'`, ruleRmRoot},
		{`ruby -e 'system("rm -rf #@d")'`, ruleRmRoot},
		{`php -r 'system("rm -rf {$d}");'`, ruleRmRoot},
		{`php -r 'system("rm -rf $d");'`, ruleRmRoot},
		{"node -e 'require(\"child_process\").execSync(`rm -rf ${d}`)'", ruleRmRoot},
		{`perl -e 'system("$cmd")'`, ruleUnresolved},
		{`perl -e 'system("echo $d")'`, ""},
		{`perl -e 'system(q{rm -rf $d})'`, ""}, // q{} does not interpolate: the shell's $d, unset
		{`ruby -e 'system("ls #{d}")'`, ""},
		{`ruby -e 'system(%q(rm -rf #{d}))'`, ""},
		{"node -e 'require(\"child_process\").execSync(`ls ${d}`)'", ""},
		{`php -r 'system('"'"'rm -rf $d'"'"');'`, ""},
		{`perl -e 'print "hello $ENV{USER}\n"'`, ""},
	})
}
