package plugin

import (
	"os"
	"path/filepath"
)

// prelude gives the test plugins the protocol in three shell functions:
// hello writes the hello, request reads the host's request and sets
// $req and its $id, and event TYPE [,"FIELD":VALUE...] writes an event
// for $id.
const prelude = `#!/bin/sh
hello() { echo '{"type":"hello","protocol":1,"name":"test"}'; }
request() {
	read -r req
	id=$(printf '%s\n' "$req" | sed -n 's/^{"type":"[a-z]*","id":"\([^"]*\)".*/\1/p')
}
event() { printf '{"type":"%s","id":"%s"%s}\n' "$1" "$id" "$2"; }
`

// testPlugins are plugins that misbehave, each in its own way, as shell
// scripts named sandrun-backend-NAME. Some take files from their own
// environment (Config.Env): PIDFILE gets the pid of a process they leave
// in their group, ENVFILE their environment.
var testPlugins = map[string]string{
	// future speaks a protocol from the future.
	"future": `echo '{"type":"hello","protocol":2,"name":"future"}'; cat >/dev/null`,
	// quitter exits before its hello.
	"quitter": `echo "cannot start: no configuration" >&2; exit 1`,
	// mute never says hello.
	"mute": `exec sleep 300`,
	// garbage answers a run with a log line, on stdout, that quotes the
	// request: the job's environment included.
	"garbage": `hello; request; echo "running: $req"; cat >/dev/null`,
	// echo answers a run with the request itself: JSON of the wrong type.
	"echo": `hello; request; printf '%s\n' "$req"; cat >/dev/null`,
	// Each of these breaks one rule of the protocol.
	"wrongid":    `hello; request; id=other; event exit ',"exit_code":0'`,
	"noexitcode": `hello; request; event exit`,
	"unknown":    `hello; request; event progress ',"percent":50'`,
	"nohello":    `echo '{"type":"started","id":"r1"}'; cat >/dev/null`,
	"badbase64":  `hello; request; event stdout ',"data":"!!"'; cat >/dev/null`,
	"latestart":  `hello; request; event stdout ',"data":"aGkK"'; event started; cat >/dev/null`,
	"longline":   `hello; request; head -c 2000000 /dev/zero | tr '\0' a; echo; cat >/dev/null`,
	// crash sends some output, logs, and exits 3 in the middle of a run.
	"crash": `hello; request; event started; event stdout ',"data":"cGFydGlhbAo="'
echo "crashing now" >&2; exit 3`,
	// deaf ignores cancels, TERM and the end of its stdin; it leaves a
	// process in its group, then says "ready".
	"deaf": `trap '' TERM; hello; request; event started
sleep 300 & echo $! >"$PIDFILE"; event stdout ',"data":"cmVhZHkK"'; wait`,
	// lingers ends its run but does not exit; it leaves a process in its
	// group.
	"lingers": `hello; request; sleep 300 & echo $! >"$PIDFILE"
event exit ',"exit_code":0'; exec sleep 300`,
	// refuses fails every request, permanently.
	"refuses": `hello; request; event error ',"message":"no quota left","permanent":true'`,
	// env writes its environment to ENVFILE and is valid.
	"env": `env >"$ENVFILE"; hello; request; event valid`,
}

// writeTestPlugins writes testPlugins into dir.
func writeTestPlugins(dir string) error {
	for name, body := range testPlugins {
		if err := os.WriteFile(filepath.Join(dir, "sandrun-backend-"+name), []byte(prelude+body+"\n"), 0o755); err != nil {
			return err
		}
	}
	return nil
}
