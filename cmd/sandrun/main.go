// Command sandrun is the user's CLI: submit jobs, follow them, cancel
// them, inspect the DLQ, and run everything on one machine with `dev`.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sandrun/sandrun/internal/app"
)

const longHelp = `sandrun runs untrusted commands through a JetStream queue.

COMMAND after --: one word is a shell script as written (submit -- 'echo hi;
exit 3'); several words each arrive as given, as with docker run (submit --
sh -c 'echo hi; exit 3' runs sh with two arguments).

Commands that talk to a server take the connection flags (--context,
--nats-url, --creds, --tls-*) anywhere on the line. Without them, the
context chosen with --context, $SANDRUN_CONTEXT or "sandrun context use"
says where to connect; "sandrun dev" and "sandrun server" save one for
themselves. Read commands print -o table (default), json or yaml.`

// rootExamples, like every command's Example, are run against `sandrun
// dev` by TestReadmeAndHelpExamples: ID is the last job id printed, BATCH
// the last batch id, and "# exits N" the exit code expected.
const rootExamples = `  sandrun dev                                  # a server, a worker and the scheduler on this machine
  sandrun submit --wait -- echo hello          # run a command and follow it
  sandrun submit -f examples/job.yaml          # a job spec from a file (prints its id)
  sandrun status ID -o json                    # a job's record and result
  sandrun logs -f ID                           # follow its output
  sandrun ls --state failed                    # recent jobs
  sandrun context ls                           # the servers this CLI knows`

// cli carries the process's streams so commands are testable.
type cli struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	// conn holds the connection flags of the command line being run.
	conn *connFlags
}

// exitError carries a specific exit code (submit --wait, policy check).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	c := cli{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin}
	os.Exit(c.run(os.Args[1:]))
}

// run executes one command line and returns the process's exit code: 0,
// 1 for a failure, 2 for a command line that could not be understood
// (reported before anything ran), or the code a command chose.
func (c cli) run(args []string) int {
	c.conn = &connFlags{}
	started := false
	root := c.rootCmd(&started)
	root.SetArgs(args)
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.SetIn(c.stdin)
	ctx, cancel := app.SignalContext()
	defer cancel()
	cmd, err := root.ExecuteContextC(ctx)
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, pflag.ErrHelp):
		return 0
	case !started || errors.Is(err, errUsage):
		fmt.Fprintf(c.stderr, "%s: %v\nRun '%s --help' for usage.\n", cmd.CommandPath(), err, cmd.CommandPath())
		return 2
	}
	fmt.Fprintf(c.stderr, "%s: %v\n", cmd.CommandPath(), err)
	return 1
}

// rootCmd builds the command tree. started is set once a command's own
// code runs, so that errors before it (flags, arguments, unknown
// commands) are usage errors.
func (c cli) rootCmd(started *bool) *cobra.Command {
	root := &cobra.Command{
		Use:           "sandrun",
		Short:         "run untrusted, agent-issued commands through a JetStream queue",
		Long:          longHelp,
		Example:       rootExamples,
		Version:       versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRun: func(*cobra.Command, []string) {
			*started = true
		},
	}
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%v", err) })
	c.conn.register(root.PersistentFlags())
	root.AddGroup(&cobra.Group{ID: "jobs", Title: "Jobs:"}, &cobra.Group{ID: "ops", Title: "Running sandrun:"})
	for _, cmd := range []*cobra.Command{
		c.submitCmd(), c.statusCmd(), c.logsCmd(), c.cancelCmd(), c.lsCmd(), c.batchCmd(),
		c.schedulesCmd(), c.workspaceCmd(), c.dlqCmd(), c.exportCmd(), c.policyCmd(),
	} {
		cmd.GroupID = "jobs"
		root.AddCommand(cmd)
	}
	for _, cmd := range []*cobra.Command{
		c.devCmd(), c.serverCmd(), c.workerCmd(), c.schedulerCmd(), c.authCmd(), c.contextCmd(),
		c.doctorCmd(), c.sifCmd(), c.versionCmd(),
	} {
		cmd.GroupID = "ops"
		root.AddCommand(cmd)
	}
	for _, cmd := range root.Commands() {
		groupsRefuseUnknown(cmd)
	}
	root.SetHelpCommandGroupID("ops")
	root.SetCompletionCommandGroupID("ops")
	return root
}

// groupsRefuseUnknown makes every command that only holds subcommands
// print its help when called alone, and refuse an unknown subcommand
// (cobra runs neither for a command without a Run of its own).
func groupsRefuseUnknown(cmd *cobra.Command) {
	if cmd.HasSubCommands() && cmd.Run == nil && cmd.RunE == nil {
		cmd.Args = cobra.ArbitraryArgs
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			var names []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, sub.Name())
				}
			}
			return usageErr("unknown command %q (want %s)", args[0], strings.Join(names, ", "))
		}
	}
	for _, sub := range cmd.Commands() {
		groupsRefuseUnknown(sub)
	}
}

var errUsage = errors.New("usage")

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// argsUsage checks a command's operand count, as a usage error.
func argsUsage(least, most int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < least || (most >= 0 && len(args) > most) {
			return usageErr("want %s, got %d argument(s)", what, len(args))
		}
		return nil
	}
}

// daemonCmd runs a daemon with its own (standard library) flags: the
// same command line as the worker and scheduler binaries.
func daemonCmd(name, short string, roles app.Roles) *cobra.Command {
	return &cobra.Command{
		Use:                name + " [flags]",
		Short:              short,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := app.DaemonMain("sandrun "+name, roles, args); code != 0 {
				return exitError{code: code}
			}
			return nil
		},
	}
}

func (c cli) workerCmd() *cobra.Command {
	return daemonCmd("worker", "run a worker (same as the worker binary; --help lists its flags)", app.Roles{Worker: true})
}

func (c cli) schedulerCmd() *cobra.Command {
	return daemonCmd("scheduler", "run the scheduler (same as the scheduler binary; --help lists its flags)", app.Roles{Scheduler: true})
}
