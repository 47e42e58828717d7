package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
)

// Workers lists the live workers (those whose registration is current),
// by name.
func (c *Client) Workers(ctx context.Context) ([]jobs.WorkerInfo, error) {
	lister, err := c.store.Workers.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var out []jobs.WorkerInfo
	for k := range lister.Keys() {
		e, err := c.store.Workers.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue // gone meanwhile
		}
		if err != nil {
			return nil, err
		}
		var wi jobs.WorkerInfo
		if err := json.Unmarshal(e.Value(), &wi); err != nil {
			continue // not a worker entry
		}
		out = append(out, wi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CheckPlacement says why no live worker could run a job of queue on
// backend profile right now: no worker serves the queue, or none of
// those that do has the profile (workers validate every profile at
// start-up, so a registered profile resolved its credentials). It returns
// "" when one can. Jobs wait in the queue for a worker either way; this is
// for a warning at submit.
func (c *Client) CheckPlacement(ctx context.Context, queue, backend string) (string, error) {
	ws, err := c.Workers(ctx)
	if err != nil {
		return "", err
	}
	var serving []jobs.WorkerInfo
	for _, w := range ws {
		if slices.Contains(w.Queues, queue) {
			serving = append(serving, w)
		}
	}
	if len(serving) == 0 {
		return fmt.Sprintf("no live worker serves queue %q (%d worker(s) live)", queue, len(ws)), nil
	}
	var have []string
	for _, w := range serving {
		if slices.Contains(w.Backends, backend) {
			return "", nil
		}
		have = append(have, fmt.Sprintf("%s: %s", w.Name, strings.Join(w.Backends, ", ")))
	}
	return fmt.Sprintf("no live worker of queue %q has backend profile %q (%s)", queue, backend, strings.Join(have, "; ")), nil
}
