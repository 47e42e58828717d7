package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// asynqTaskType is the benchmark's one task type.
const asynqTaskType = "sh:true"

// redisVersion returns `redis-server --version`'s version, or "unknown".
func redisVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "unknown"
	}
	for f := range strings.FieldsSeq(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return strings.TrimSpace(string(out))
}

// asynqTarget is asynq on a private redis-server: an asynq.Client that
// enqueues and an asynq.Server of Concurrency C in this process whose
// handler execs the command.
type asynqTarget struct {
	dir   string
	redis *proc
	cl    *asynq.Client
	srv   *asynq.Server
	cur   atomic.Pointer[tracker]
}

// asynqOpts configure an asynq target.
type asynqOpts struct {
	redisBin    string
	concurrency int
	// aof turns on redis's append-only file with appendfsync everysec;
	// off, redis keeps nothing on disk.
	aof bool
	// checkInterval is asynq's TaskCheckInterval (0: asynq's default).
	checkInterval time.Duration
}

func startAsynq(ctx context.Context, o asynqOpts) (_ *asynqTarget, err error) {
	dir, err := os.MkdirTemp("", "asynq-bench-")
	if err != nil {
		return nil, err
	}
	t := &asynqTarget{dir: dir}
	defer func() {
		if err != nil {
			_ = t.close()
		}
	}()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--daemonize", "no"}
	if o.aof {
		args = append(args, "--appendonly", "yes", "--appendfsync", "everysec")
	} else {
		args = append(args, "--appendonly", "no")
	}
	if t.redis, err = startProc(procSpec{name: "redis-server", path: o.redisBin, args: args}); err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if err := waitReady(ctx, "redis", 30*time.Second, func(ctx context.Context) error {
		rc := redis.NewClient(&redis.Options{Addr: addr})
		defer func() { _ = rc.Close() }()
		return rc.Ping(ctx).Err()
	}, t.redis); err != nil {
		return nil, err
	}
	opt := asynq.RedisClientOpt{Addr: addr}
	t.cl = asynq.NewClient(opt)
	t.srv = asynq.NewServer(opt, asynq.Config{
		Concurrency:       o.concurrency,
		TaskCheckInterval: o.checkInterval,
		LogLevel:          asynq.WarnLevel,
	})
	handler := asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		id, ok := asynq.GetTaskID(ctx)
		if !ok {
			return errors.New("no task ID in the handler's context")
		}
		s, err := decodeStamp(task.Payload())
		if err != nil {
			return err
		}
		return runJob(ctx, t.cur.Load(), id, s.time())
	})
	if err := t.srv.Start(handler); err != nil {
		t.srv = nil
		return nil, fmt.Errorf("asynq server: %w", err)
	}
	return t, nil
}

func (t *asynqTarget) track(tr *tracker) { t.cur.Store(tr) }

func (t *asynqTarget) enqueue(ctx context.Context) error {
	at := time.Now()
	_, err := t.cl.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, newStamp(at).encode()))
	return err
}

func (t *asynqTarget) close() error {
	var errs []error
	if t.srv != nil {
		t.srv.Shutdown()
	}
	if t.cl != nil {
		errs = append(errs, t.cl.Close())
	}
	if t.redis != nil {
		errs = append(errs, t.redis.stop())
	}
	errs = append(errs, os.RemoveAll(t.dir))
	return errors.Join(errs...)
}

var _ target = (*asynqTarget)(nil)
