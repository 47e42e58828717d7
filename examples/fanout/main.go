// Command fanout shows an agent fanning work out through sandrun: it
// submits 100 commands as one batch of subagent jobs, gathers each
// item's output as it ends, and combines the results.
//
//	sandrun dev &                       # an embedded NATS and a worker
//	go run ./examples/fanout -n 100
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sandrun/sandrun/client"
)

func main() {
	url := flag.String("nats-url", "", "NATS URL of the sandrun deployment (default: SANDRUN_NATS_URL, else the dev server)")
	n := flag.Int("n", 100, "commands to fan out")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *url, *n, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fanout:", err)
		os.Exit(1)
	}
}

// run fans n commands out (item i squares i) and prints the sum of their
// outputs.
func run(ctx context.Context, url string, n int, out io.Writer) error {
	c, err := client.Connect(ctx, client.Options{URL: url, Name: "fanout-example"})
	if err != nil {
		return err
	}
	defer c.Close()

	// One spec per subtask. Subagent jobs are judged under the `deny`
	// approval mode: a dangerous command is refused, not run.
	specs := make([]client.Spec, n)
	for i := range specs {
		specs[i] = client.Spec{
			Command:     `echo $((N * N))`,
			Env:         map[string]string{"N": strconv.Itoa(i)},
			Origin:      client.OriginSubagent,
			Timeout:     client.Duration(time.Minute),
			MaxAttempts: 2,
		}
	}
	id := fmt.Sprintf("fanout-%d", time.Now().UnixNano())
	if _, err := c.SubmitBatch(ctx, client.BatchOptions{ID: id, Labels: map[string]string{"agent": "fanout-example"}}, specs); err != nil {
		return err
	}
	fmt.Fprintf(out, "batch %s: %d items submitted\n", id, n)

	// Gather each item's output as it ends (an interrupted wait, run
	// again, reports the items that had ended first).
	outputs := make([]string, n)
	final, err := c.WaitBatch(ctx, id, client.WaitOptions{
		OnItem: func(it client.BatchItem) {
			if it.Result.State == client.StateSucceeded {
				outputs[it.Index] = strings.TrimSpace(it.Result.Stdout.Head)
			}
		},
	})
	if err != nil {
		return err
	}
	sum := 0
	for i, o := range outputs {
		v, err := strconv.Atoi(o)
		if err != nil {
			return fmt.Errorf("item %d: output %q (batch: %v)", i, o, final.Counts)
		}
		sum += v
	}
	fmt.Fprintf(out, "batch %s: %d/%d succeeded; sum of outputs %d\n", id, final.Counts[client.StateSucceeded], n, sum)
	return nil
}
