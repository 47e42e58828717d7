// Package vercel runs each job attempt in a Vercel Sandbox (a Firecracker
// microVM) of its own, through the Sandbox REST API as the
// @vercel/sandbox SDK (v2 endpoints, named sandboxes) speaks it, with a
// small hand-written client. Vercel publishes no spec file; the wire
// format follows the SDK's zod validators and the REST reference pages.
//
// Every request carries `Authorization: Bearer TOKEN` and the teamId
// query parameter. Credentials are a Vercel access token (token_env, with
// team_id and project_id) or an OIDC token (oidc_token_env), a JWT whose
// unverified payload names the team (owner_id) and usually the project
// (project_id). They are read and checked together in New; the OIDC token
// is not refreshed.
//
// One attempt:
//
//  1. POST /v2/sandboxes creates a named sandbox (persistent: false, so
//     nothing is snapshotted) with the profile's runtime, vcpus and
//     network policy, tagged sandrun-{managed,deployment,job,attempt,
//     worker}, and a timeout — the job's remaining deadline plus its grace
//     and a minute, at most sandbox_timeout — after which Vercel stops it
//     even if no worker is left. GET /v2/sandboxes/sessions/{id} is polled
//     until its session is running.
//  2. POST …/sessions/{id}/cmd starts `/bin/sh -c WRAPPER sandrun COMMAND
//     NAMES...` with the job's cwd and env: the wrapper runs `env -i
//     NAME="$NAME"... /bin/sh -c COMMAND </dev/null`, so the job's
//     environment is exactly Spec.Env plus PATH (DefaultPath) when it sets
//     none — not the sandbox's — its standard input is empty, and the
//     values travel in the env field, never in the command line. Its
//     output streams from …/cmd/{cmdId}/logs (ND-JSON lines {stream,
//     data}); its exit code comes from …/cmd/{cmdId}?wait=true. A stream
//     that breaks is opened again and what was copied is skipped; one
//     that goes silent without breaking, once the exit code is known and
//     nothing has come for httpsandbox.LogDrain, is given up and the
//     ended command's log read once more the same way.
//  3. POST …/sessions/{id}/stop and DELETE /v2/sandboxes/{name} remove
//     the sandbox, whatever happened: what the job left behind ends with
//     it.
//
// When ctx is done, POST …/cmd/{cmdId}/kill sends SIGTERM (signal 15),
// then SIGKILL (9) once Spec.Grace() has passed; then the sandbox is
// stopped and deleted. An exit code 128+N after sandrun sent signal N is
// reported as that signal (ExitCode -1); a job that traps TERM and exits
// keeps its code. Run returns an error wrapping context.Cause(ctx).
//
// Output: log lines carry text in JSON strings. Bytes that are not UTF-8
// are read back exactly when the server escapes each as a lone surrogate
// \udc80-\udcff (as the fake does, after Python's surrogateescape); what
// the hosted service does with them is not documented.
//
// Orphans: a worker killed with SIGKILL leaves its sandbox running until
// its timeout. ReapOrphans lists the project's sandboxes tagged with the
// deployment and stops and deletes those whose attempt is not live.
//
// Errors: 401 and 403 wrap backends.ErrPermanent (naming the variable
// that held the token, never the token); 429 and 5xx answers are retried
// with backoff on idempotent calls, then, like connection failures, wrap
// backends.ErrUnavailable.
package vercel
