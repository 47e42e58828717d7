// Command workspace shows an agent working in steps that build on each
// other, through sandrun: each step is a job in the same workspace, a
// durable directory that outlives the job (and the worker), so step 2
// uses the tool step 1 installed and step 3 reads what step 2 wrote.
// The steps run one at a time, in the order they were submitted, even
// when they are all submitted at once.
//
//	sandrun dev &                       # an embedded NATS and a worker
//	go run ./examples/workspace
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sandrun/sandrun/client"
)

func main() {
	url := flag.String("nats-url", "", "NATS URL of the sandrun deployment (default: SANDRUN_NATS_URL, else the dev server)")
	name := flag.String("workspace", fmt.Sprintf("demo-%d", time.Now().Unix()), "workspace name")
	keep := flag.Bool("keep", false, "keep the workspace at the end (default: remove it)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *url, *name, *keep, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "workspace:", err)
		os.Exit(1)
	}
}

// steps are an agent's commands: install a tool, use it, read the result.
var steps = []string{
	`mkdir -p bin && printf '#!/bin/sh\nwc -w | tr -d " "\n' > bin/count-words && chmod +x bin/count-words`,
	`echo "the quick brown fox jumps over the lazy dog" | ./bin/count-words > words.txt`,
	`echo "words: $(cat words.txt)"`,
}

// run submits the steps to workspace name at once, prints each step's
// output in order, lists the workspace and removes it unless keep.
func run(ctx context.Context, url, name string, keep bool, out io.Writer) error {
	c, err := client.Connect(ctx, client.Options{URL: url, Name: "workspace-example"})
	if err != nil {
		return err
	}
	defer c.Close()
	var ids []string
	for _, cmd := range steps {
		spec, err := c.Submit(ctx, client.Spec{Command: cmd, Workspace: name, Origin: client.OriginSubagent,
			Timeout: client.Duration(time.Minute), MaxAttempts: 1})
		if err != nil {
			return err
		}
		ids = append(ids, spec.ID)
	}
	for i, id := range ids {
		r, err := c.Follow(ctx, id, client.FollowOptions{})
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := c.Output(ctx, r, &buf, &buf); err != nil {
			return err
		}
		fmt.Fprintf(out, "step %d: %s %s", i+1, r.State, buf.String())
		if buf.Len() == 0 || buf.Bytes()[buf.Len()-1] != '\n' {
			fmt.Fprintln(out)
		}
		if r.State != client.StateSucceeded {
			return fmt.Errorf("step %d (job %s) %s: %s", i+1, id, r.State, r.Error)
		}
	}
	list, err := c.Workspaces(ctx)
	if err != nil {
		return err
	}
	for _, w := range list {
		if w.Workspace == name {
			fmt.Fprintf(out, "workspace %s on profile %s, last used by job %s\n", w.Workspace, w.Backend, w.LastJob)
		}
	}
	if keep {
		return nil
	}
	spec, err := c.RemoveWorkspace(ctx, name)
	if err != nil {
		return err
	}
	r, err := c.Follow(ctx, spec.ID, client.FollowOptions{})
	if err != nil {
		return fmt.Errorf("remove workspace %s: %w", name, err)
	}
	if r.State != client.StateSucceeded {
		return fmt.Errorf("remove workspace %s: %s: %s", name, r.State, r.Error)
	}
	fmt.Fprintf(out, "workspace %s removed\n", name)
	return nil
}
