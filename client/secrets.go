package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/secrets"
)

// ErrNoSealKey is returned when no worker has published the key secret values are sealed
// to, so a job with secret_env cannot be submitted.
var ErrNoSealKey = errors.New("no worker has published a secrets key: jobs with secret_env need a worker started with secrets_key_file (sandrun dev sets it)")

// sealKey caches the workers' public key (shared by a client's copies),
// and the sealed form of values already sealed: jobs of a batch that
// share a token share its ciphertext, and pay for one seal.
type sealKey struct {
	mu     sync.Mutex
	pub    string
	sealed map[string]string
}

// maxSealCache bounds the sealed values kept (the cache starts over when
// full).
const maxSealCache = 1024

// Seal returns spec with every secret_env value sealed to the workers'
// key and bound to the client's owner: only a worker can read it, only
// for a job of that owner, and it is never stored in the clear. Values
// already sealed are kept.
func (c *Client) Seal(ctx context.Context, spec jobs.Spec) (jobs.Spec, error) {
	return c.SealFor(ctx, spec, c.owner)
}

// SealFor is Seal with the values bound to owner: ORIGIN.NAME, or
// ORIGIN.* for any identity of that origin (a schedule's secrets open for
// whichever scheduler fires it).
func (c *Client) SealFor(ctx context.Context, spec jobs.Spec, owner string) (jobs.Spec, error) {
	if len(spec.SecretEnv) == 0 {
		return spec, nil
	}
	pub, err := c.workersKey(ctx)
	if err != nil {
		return jobs.Spec{}, err
	}
	spec.Env = maps.Clone(spec.Env)
	for _, k := range spec.SecretEnv {
		v, ok := spec.Env[k]
		if !ok || secrets.IsSealed(v) {
			continue
		}
		if spec.Env[k], err = c.sealValue(owner, v, pub); err != nil {
			return jobs.Spec{}, fmt.Errorf("secret_env.%s: %w", k, err)
		}
	}
	return spec, nil
}

func (c *Client) workersKey(ctx context.Context) (string, error) {
	c.seal.mu.Lock()
	defer c.seal.mu.Unlock()
	if c.seal.pub != "" {
		return c.seal.pub, nil
	}
	e, err := c.store.State.Get(ctx, jobs.SealKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", ErrNoSealKey
	}
	if err != nil {
		return "", fmt.Errorf("secrets key: %w", err)
	}
	c.seal.pub = string(e.Value())
	return c.seal.pub, nil
}

func (c *Client) sealValue(owner, v, pub string) (string, error) {
	c.seal.mu.Lock()
	defer c.seal.mu.Unlock()
	key := owner + "\x00" + v
	if s, ok := c.seal.sealed[key]; ok {
		return s, nil
	}
	s, err := secrets.Seal(owner, v, pub)
	if err != nil {
		return "", err
	}
	if c.seal.sealed == nil || len(c.seal.sealed) >= maxSealCache {
		c.seal.sealed = make(map[string]string)
	}
	c.seal.sealed[key] = s
	return s, nil
}
