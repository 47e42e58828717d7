// Package daytona runs each job attempt in a Daytona sandbox of its own,
// through Daytona's public REST API (the control plane) and the toolbox
// API of the sandbox's daemon, with a small hand-written client that
// follows the v0.190.0 OpenAPI definitions (api.openapi.yaml and
// toolbox.openapi.yaml, Apache-2.0).
//
// One attempt, in session mode (the default):
//
//  1. POST /sandbox creates the sandbox from the profile's image (as a
//     build whose Dockerfile is `FROM image`, with the cpu, memory and
//     disk resources) or snapshot, labelled io.sandrun.{managed,
//     deployment,job,attempt,worker}, with autoStopInterval set (never
//     off) and autoDeleteInterval 0: a sandbox nobody talks to any more
//     stops, then deletes itself. GET /sandbox/{id} is polled until the
//     state is started; build_failed or error ends the attempt with
//     ErrPermanent (a bad image or snapshot), as does a create the API
//     refuses with 400, 404 or 422.
//  2. On the toolbox ({toolboxProxyUrl}/{sandboxId}) a session is created
//     and the job runs in it as an asynchronous session command. Its
//     output is streamed from the logs endpoint with follow=true (a
//     WebSocket whose stdout and stderr chunks are marked with the bytes
//     01 01 01 and 02 02 02); GET …/command/{id} is polled for the exit
//     code. A stream that breaks (a dropped connection) is opened again:
//     the daemon replays the log from its start, and the bytes already
//     copied are skipped, so no output is lost or repeated. A stream
//     that goes silent without breaking (a link dead without a reset)
//     cannot be told from one held open by the job's leftovers: once the
//     exit code is known and nothing has come for
//     httpsandbox.LogDrain, the log is read once more without follow and
//     what was not copied yet is copied.
//  3. DELETE /sandbox/{id} removes the sandbox, whatever happened: the
//     job's leftover background processes end with it.
//
// What the job sees: the session command is a small POSIX sh wrapper
// (script.go) that records the job's pid, changes to Spec.Dir (relative
// to the sandbox's default directory; a missing one exits 127) and runs
// `env -i K=V... /bin/sh -c COMMAND </dev/null`. So the environment is
// exactly Spec.Env plus PATH (DefaultPath) when the job sets none —
// nothing of the daemon's or the worker's — and standard input is empty.
// Session commands have no env field, so the values travel, shell-quoted,
// in the command's text; that text lives in the sandbox until it is
// deleted, and never appears in an error or a log of this package.
//
// When ctx is done (timeout, cancel, shutdown), the toolbox has no kill
// for a command, so the backend signals the job from inside the sandbox:
// POST /process/execute runs `kill -TERM` (and CONT) on the recorded pid —
// on its process group when the job leads one — then, after
// Spec.Grace(), `kill -KILL`; then the sandbox is deleted, which ends
// every process left in it. An exit status 128+N after sandrun sent
// signal N is reported as that signal (ExitCode -1). A job that traps
// TERM and exits on its own keeps its exit code. Run returns an error
// wrapping context.Cause(ctx).
//
// Execute mode (mode: execute) runs the job with one synchronous POST
// /process/execute instead, the job's env in its envs field and cwd in
// its cwd field. Its output arrives when it ends, stdout and stderr
// combined (the API returns one string), all on Output.Stdout, and, being
// JSON text, bytes that are not UTF-8 are replaced. The request always
// carries a timeout: the job's remaining deadline plus a margin (or
// execute_timeout without one), so that ctx expires first. A 408 (the
// daemon's timeout, which has killed the command) that still comes first
// is waited out for up to the margin: ctx ending meanwhile makes it the
// job's timeout, otherwise it is a retryable failure. ctx done stops the
// job as in session mode, the open request then bringing its exit code.
// Execute mode does not survive a broken connection: the output and exit
// code come only in the answer, and an execute has no ID to ask for them
// again. When the connection breaks (or the toolbox answers 5xx) while
// the job runs, Run returns an error wrapping backends.ErrUnavailable
// that says the output is lost, with no output written and exit code -1;
// the sandbox is deleted, ending the job. Session mode, whose log stream
// is reopened and resumed where it broke, loses nothing; hence it is the
// default.
//
// Workspaces (Spec.Workspace): each is a Daytona volume named
// sandrun-ws-DEPLOYMENT-NAME (a "." appended when that would end in
// "-deleted", the suffix the API gives deleted volumes). Before the
// sandbox is created, GET /volumes/by-name/{name} finds it, or POST
// /volumes makes it, and it is polled until ready (a volume still being
// deleted is waited out, then made anew), within start_timeout; state
// error is ErrPermanent. The create request mounts it (volumes: its ID at
// WorkspaceDir, /workspace), which is then the job's working directory
// unless Spec.Dir is absolute (a relative Dir is taken inside it), in
// both modes. RemoveWorkspace deletes it (DELETE /volumes/{id}) and waits
// until the API no longer finds it; none is not an error. The worker runs
// one job of a workspace at a time, so a volume is never mounted by two
// sandboxes of sandrun at once.
//
// Orphans: a worker killed with SIGKILL leaves its sandbox running.
// ReapOrphans lists the deployment's sandboxes by label and deletes those
// whose attempt is not live. Should no worker be left at all, the
// sandbox's auto-stop (then auto-delete) ends it.
//
// Errors: 401 and 403 wrap backends.ErrPermanent (the message names
// api_key_env, never the key); 429 and 5xx answers are retried with
// backoff on idempotent calls, then, like connection failures, wrap
// backends.ErrUnavailable.
package daytona
