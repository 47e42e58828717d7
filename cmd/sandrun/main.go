// Command sandrun is the user's CLI: submit jobs, follow them, cancel
// them, inspect the DLQ, and run everything on one machine with `dev`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/app"
)

const usage = `sandrun runs untrusted commands through a JetStream queue.

Usage:
  sandrun submit [flags] -- COMMAND...   submit a job (prints its id; --wait follows it)
  sandrun status ID [--json]             show a job
  sandrun logs ID [-f]                   print a job's output (-f: follow)
  sandrun cancel ID                      cancel a queued or running job
  sandrun ls [--state S] [--queue Q]     list jobs
  sandrun dlq ls | dlq retry ID          dead-letter queue
  sandrun workspace ls [--json] | rm NAME  your workspaces; rm deletes one's storage after its queued jobs
  sandrun export --out FILE [--follow]   finished jobs as JSON lines (a history that outlives retention)
  sandrun batch submit FILE.jsonl        many jobs as one batch (or --template SPEC --params FILE.jsonl)
  sandrun batch status|wait|results|cancel ID ; batch retry ID --failed
  sandrun schedules ls|add FILE|rm|suspend|resume|trigger|history NAME
                                         cron schedules (the schedulers watch them)
  sandrun policy check [flags] -- CMD    judge a command as a worker would (exit 0 approve, 3 deny)
  sandrun policy rules                   list the policy's rules
  sandrun doctor [--config FILE]         check NATS, the policy and every backend profile
  sandrun sif ls|prune [--dry-run]|pull REF  [--config FILE [--profile P] | --scratch DIR]
                                         the SIF cache of a singularity profile
  sandrun dev [flags]                    embedded NATS + worker + scheduler in one process (--cluster 3: three nodes)
  sandrun server --data DIR [flags]      one embedded NATS node (--cluster-name, --routes: a cluster node)
  sandrun auth add --dir DIR --name N --role R [--origin O] [-o FILE]
                                         mint credentials for an identity (auth init: make DIR;
                                         auth export: the JWTs an external nats-server trusts)
  sandrun worker [flags]                 run a worker (same as the worker binary)
  sandrun scheduler [flags]              run the scheduler (same as the scheduler binary)

COMMAND after --: one word is a shell script as written (submit -- 'echo hi;
exit 3'); several words each arrive as given, as with docker run (submit --
sh -c 'echo hi; exit 3' runs sh with two arguments).

Every command takes --nats-url (env SANDRUN_NATS_URL), --creds, --tls-cert,
--tls-key and --tls-ca. Run "sandrun COMMAND -h" for a command's flags.
`

// cli carries the process's streams so commands are testable.
type cli struct {
	stdout, stderr io.Writer
	stdin          io.Reader
}

// exitError carries a specific exit code (submit --wait).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	c := cli{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin}
	os.Exit(c.run(os.Args[1:]))
}

func (c cli) run(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(c.stdout, usage)
		return 0
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "worker":
		return app.DaemonMain("sandrun worker", app.Roles{Worker: true}, rest)
	case "scheduler":
		return app.DaemonMain("sandrun scheduler", app.Roles{Scheduler: true}, rest)
	}
	ctx, cancel := app.SignalContext()
	defer cancel()
	var err error
	switch cmd {
	case "submit":
		err = c.submit(ctx, rest)
	case "status":
		err = c.status(ctx, rest)
	case "logs":
		err = c.logs(ctx, rest)
	case "cancel":
		err = c.cancel(ctx, rest)
	case "workspace":
		err = c.workspace(ctx, rest)
	case "export":
		err = c.export(ctx, rest)
	case "ls":
		err = c.ls(ctx, rest)
	case "dlq":
		err = c.dlq(ctx, rest)
	case "dev":
		err = c.dev(ctx, rest)
	case "policy":
		err = c.policyCmd(ctx, rest)
	case "schedules":
		err = c.schedules(ctx, rest)
	case "doctor":
		err = c.doctor(ctx, rest)
	case "sif":
		err = c.sif(ctx, rest)
	case "batch":
		err = c.batch(ctx, rest)
	case "server":
		err = c.server(ctx, rest)
	case "auth":
		err = c.auth(rest)
	default:
		fmt.Fprintf(c.stderr, "sandrun: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(c.stderr, "sandrun %s: %v\n", cmd, err)
		return 2
	}
	fmt.Fprintf(c.stderr, "sandrun %s: %v\n", cmd, err)
	return 1
}

var errUsage = errors.New("usage")

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// flags returns a flag set with the connection flags.
func (c cli) flags(name string, n *app.NATSConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("sandrun "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	app.NATSFlags(fs, n)
	return fs
}

// connect returns a client bound to the existing layout.
func connect(ctx context.Context, n app.NATSConfig) (*client.Client, func(), error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := client.Connect(cctx, client.Options{URL: n.URL, CredsFile: n.Creds, TLSCert: n.TLSCert, TLSKey: n.TLSKey, TLSCA: n.TLSCA, Name: "sandrun-cli"})
	if err != nil {
		return nil, nil, err
	}
	return c, c.Close, nil
}
