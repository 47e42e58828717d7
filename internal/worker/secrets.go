package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/secrets"
)

// publishSealKey makes the worker's public secrets key the one submitters
// seal to. Every worker of a deployment must hold the same key: a worker
// with another refuses to start rather than fail every job with secrets.
func (w *Worker) publishSealKey(ctx context.Context) error {
	k := w.deps.Secrets
	if k == nil {
		return nil
	}
	_, err := w.store.State.Create(ctx, jobs.SealKey, []byte(k.Public()))
	if errors.Is(err, jetstream.ErrKeyExists) {
		e, gerr := w.store.State.Get(ctx, jobs.SealKey)
		if gerr != nil {
			return fmt.Errorf("secrets key: %w", gerr)
		}
		if string(e.Value()) != k.Public() {
			return fmt.Errorf("secrets_key_file: this worker's key (%s) is not the deployment's (%s): give every worker the same key file", k.Public(), e.Value())
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("secrets key: publish: %w", err)
	}
	return nil
}

// checkSealed refuses a spec that carries a secret value in the clear: it
// would be stored so in the job record. (The dispatch message itself is
// removed when the job is refused.)
func checkSealed(spec jobs.Spec) error {
	for _, k := range spec.SecretEnv {
		if !secrets.IsSealed(spec.Env[k]) {
			return &jobs.FieldError{Field: "secret_env." + k, Msg: "is not sealed to the workers' key (submit through the client, which seals it)"}
		}
	}
	return nil
}

// openEnv returns the job's environment with its secret values opened and
// the variables it names in forward_env supplied by the worker, and those
// values, to be masked in its output. A value sealed for
// another owner (copied from someone else's job) does not open.
func (w *Worker) openEnv(spec jobs.Spec, owner string) (env map[string]string, values []string, err error) {
	if len(spec.SecretEnv) == 0 && len(spec.ForwardEnv) == 0 {
		return spec.Env, nil, nil
	}
	env = maps.Clone(spec.Env)
	if env == nil {
		env = map[string]string{}
	}
	if values, err = w.forwardEnv(spec.Backend, spec.ForwardEnv, env); err != nil {
		return nil, nil, err
	}
	if len(spec.SecretEnv) == 0 {
		slices.Sort(values)
		return env, slices.Compact(values), nil
	}
	if w.deps.Secrets == nil {
		return nil, nil, fmt.Errorf("secret_env: worker %s has no secrets key (secrets_key_file) to open them", w.cfg.Name)
	}
	for _, k := range spec.SecretEnv {
		plain, err := w.deps.Secrets.Open(spec.Env[k], owner)
		if err != nil {
			return nil, nil, fmt.Errorf("secret_env.%s: %w", k, err)
		}
		env[k] = plain
		values = append(values, plain)
	}
	slices.Sort(values)
	return env, slices.Compact(values), nil
}
