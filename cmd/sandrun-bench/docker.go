package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"time"

	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/docker"
	"github.com/sandrun/sandrun/internal/backends/docker/dockertest"
)

// benchDocker compares, in one run, the per-job wall time of a one-shot
// `true` job three ways, interleaved: `docker run --rm` of the same image
// and hardening from the CLI, the docker backend without a warm pool, and
// the backend with a warm pool of one — refilled (and the used container
// removed) before each path's turn, the steady state of a pool that keeps
// up with its jobs.
func benchDocker(n int) error {
	c, err := client.New(client.FromEnv)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	if err := dockertest.ImportBusybox(c); err != nil {
		return err
	}
	d, err := docker.New(docker.Config{Image: dockertest.ImageRef})
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	dp, err := docker.New(docker.Config{Image: dockertest.ImageRef, WarmPool: 1})
	if err != nil {
		return err
	}
	defer func() { _ = dp.Close() }()
	ctx := context.Background()
	spec := backends.Spec{JobID: "bench", Attempt: 1, Command: "true"}
	settle := func() error { return dp.WarmPool(ctx, spec.Deployment, spec.Worker) }
	var be, pooled, cli []time.Duration
	for i := range n + 2 {
		if err := settle(); err != nil {
			return err
		}
		start := time.Now()
		if _, err := dp.Run(ctx, spec, backends.Output{Stdout: io.Discard, Stderr: io.Discard}); err != nil {
			return err
		}
		p := time.Since(start)
		if err := settle(); err != nil {
			return err
		}
		start = time.Now()
		if _, err := d.Run(ctx, spec, backends.Output{Stdout: io.Discard, Stderr: io.Discard}); err != nil {
			return err
		}
		b := time.Since(start)
		start = time.Now()
		// The backend's hardening: see containerConfig.
		out, err := exec.Command("docker", "run", "--rm", "--init", "--user", "65534:65534", "--network", "none",
			"--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--pids-limit", "256", "-m", "512m",
			"--memory-swap", "512m", "--cpus", "1", "--cgroupns", "private",
			"--tmpfs", "/tmp:rw,nosuid,size=67108864,mode=1777", dockertest.ImageRef, "/bin/sh", "-c", "true").CombinedOutput()
		if err != nil {
			return fmt.Errorf("docker run: %w: %s", err, out)
		}
		if i >= 2 { // warm-up
			be, pooled, cli = append(be, b), append(pooled, p), append(cli, time.Since(start))
		}
	}
	slices.Sort(be)
	slices.Sort(pooled)
	slices.Sort(cli)
	med := func(v []time.Duration) float64 { return ms(v[len(v)/2]) }
	fmt.Printf("\n### Docker (%d runs each, interleaved, after 2 warm-ups)\n\n", n)
	fmt.Println("| path | median per job | p90 |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| one-shot: docker backend `Run(true)`, no pool | %.1f ms | %.1f ms |\n", med(be), ms(be[len(be)*9/10]))
	fmt.Printf("| one-shot: docker backend `Run(true)`, warm pool of 1 (refilled between jobs) | %.1f ms | %.1f ms |\n", med(pooled), ms(pooled[len(pooled)*9/10]))
	fmt.Printf("| one-shot: `docker run --rm` CLI, same hardening | %.1f ms | %.1f ms |\n", med(cli), ms(cli[len(cli)*9/10]))

	// Session: exec into a long-lived container, against `docker exec`
	// into the same container.
	spec = backends.Spec{JobID: "bench", Command: "true", Session: "bench"}
	if _, err := d.Run(ctx, spec, backends.Output{Stdout: io.Discard, Stderr: io.Discard}); err != nil {
		return err
	}
	list, err := c.ContainerList(ctx, client.ContainerListOptions{Filters: make(client.Filters).Add("label", docker.LabelSession+"=bench")})
	if err != nil {
		return fmt.Errorf("session container: %w", err)
	}
	if len(list.Items) != 1 {
		return fmt.Errorf("session container: %d found, want 1", len(list.Items))
	}
	var sbe, scli []time.Duration
	for i := range n + 2 {
		start := time.Now()
		if _, err := d.Run(ctx, spec, backends.Output{Stdout: io.Discard, Stderr: io.Discard}); err != nil {
			return err
		}
		b := time.Since(start)
		// Let the backend's after-job cleanup (an exec that kills what the
		// job left behind) finish, so it does not slow the CLI's turn.
		time.Sleep(200 * time.Millisecond)
		start = time.Now()
		if out, err := exec.Command("docker", "exec", "--user", "65534:65534", list.Items[0].ID, "/bin/sh", "-c", "true").CombinedOutput(); err != nil {
			return fmt.Errorf("docker exec: %w: %s", err, out)
		}
		if i >= 2 {
			sbe, scli = append(sbe, b), append(scli, time.Since(start))
		}
	}
	slices.Sort(sbe)
	slices.Sort(scli)
	fmt.Printf("| session: docker backend `Run(true)` (exec) | %.1f ms | %.1f ms |\n", med(sbe), ms(sbe[len(sbe)*9/10]))
	fmt.Printf("| session: `docker exec` CLI into the same container | %.1f ms | %.1f ms |\n", med(scli), ms(scli[len(scli)*9/10]))
	fmt.Printf("\nRatios (median): one-shot backend/CLI %.2f without the pool, %.2f with it (pool/no pool %.2f); session backend/CLI %.2f\n",
		med(be)/med(cli), med(pooled)/med(cli), med(pooled)/med(be), med(sbe)/med(scli))
	return nil
}
