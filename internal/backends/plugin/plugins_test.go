package plugin

import (
	"os"
	"path/filepath"
	"strings"
)

// prelude gives the test plugins the protocol in shell functions. It
// reads the host's session line first, and keeps its key in a shell
// variable, never exported. send LINE writes LINE signed with the key
// (by the test binary: see signerEnv; under -race, it would sleep 1 s
// as it exits without GORACE); hello writes the hello; request
// reads the host's request and sets $req and its $id; and event TYPE
// [,"FIELD":VALUE...] writes an event for $id. SIGNER is set above it.
const prelude = `
read -r session
key=$(printf '%s\n' "$session" | sed -n 's/.*"key":"\([0-9a-f]*\)".*/\1/p')
send() { printf '%s\n%s\n' "$key" "$1" | GORACE=atexit_sleep_ms=0 ` + signerEnv + `=1 "$SIGNER"; }
hello() { send '{"type":"hello","protocol":2,"name":"test"}'; }
request() {
	read -r req
	id=$(printf '%s\n' "$req" | sed -n 's/^{"type":"[a-z]*","id":"\([^"]*\)".*/\1/p')
}
event() { send "$(printf '{"type":"%s","id":"%s"%s}' "$1" "$id" "$2")"; }
`

// testPlugins are plugins that misbehave, each in its own way, as shell
// scripts named sandrun-backend-NAME. Some take files from their own
// environment (Config.Env): PIDFILE gets the pid of a process they leave
// in their group, ENVFILE their environment.
var testPlugins = map[string]string{
	// future speaks a protocol from the future.
	"future": `send '{"type":"hello","protocol":3,"name":"future"}'; cat >/dev/null`,
	// v1 speaks protocol 1, which signs nothing.
	"v1": `echo '{"type":"hello","protocol":1,"name":"v1"}'; cat >/dev/null`,
	// unsigned and forgedhello sign their hellos wrong.
	"unsigned":    `echo '{"type":"hello","protocol":2,"name":"unsigned"}'; cat >/dev/null`,
	"forgedhello": `printf '%064d %s\n' 0 '{"type":"hello","protocol":2,"name":"forged"}'; cat >/dev/null`,
	// quitter exits before its hello.
	"quitter": `echo "cannot start: no configuration" >&2; exit 1`,
	// mute never says hello.
	"mute": `exec sleep 300`,
	// garbage logs on stdout, unsigned: a line that quotes the request,
	// the job's environment included, then seven more; then it ends the
	// run.
	"garbage": `hello; request; echo "running: $req"
for i in 1 2 3 4 5 6 7; do echo "log line $i"; done; event exit ',"exit_code":0'`,
	// echo answers a run with the request itself, signed: JSON of the
	// wrong type.
	"echo": `hello; request; send "$req"; cat >/dev/null`,
	// Each of these breaks one rule of the protocol.
	"wrongid":    `hello; request; id=other; event exit ',"exit_code":0'`,
	"noexitcode": `hello; request; event exit`,
	"unknown":    `hello; request; event progress ',"percent":50'`,
	"nohello":    `send '{"type":"started","id":"r1"}'; cat >/dev/null`,
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
	// ids appends the id of its request to IDFILE and is valid.
	"ids": `hello; request; echo "$id" >>"$IDFILE"; event valid`,
	// passthrough is a careless plugin: it runs WORKLOAD (from its own
	// environment, not the job's) with the request's id in
	// SANDRUN_REQUEST_ID, and passes the workload's output straight
	// through to its own stdout, where the host reads its events. Then it
	// sends the workload's exit code.
	"passthrough": `hello; request; event started
SANDRUN_REQUEST_ID=$id sh -c "$WORKLOAD"
event exit ",\"exit_code\":$?"`,
}

// writeTestPlugins writes testPlugins into dir, for signer, the test
// binary, to sign their lines.
func writeTestPlugins(dir, signer string) error {
	head := "#!/bin/sh\nSIGNER='" + strings.ReplaceAll(signer, "'", `'\''`) + "'\n"
	for name, body := range testPlugins {
		if err := os.WriteFile(filepath.Join(dir, "sandrun-backend-"+name), []byte(head+prelude+body+"\n"), 0o755); err != nil {
			return err
		}
	}
	return nil
}
