// Package dashboards defines sandrun's Grafana dashboards as data and
// renders them to the JSON files beside this file (go generate
// ./dashboards). Every panel query is evaluated against a live Prometheus
// scraping `sandrun dev` in the tests, so no panel names a metric the code
// does not export.
//
// Queries may use $queue, $backend (multi-value template variables, "All"
// is ".*") and $__rate_interval; panels use the ${datasource} variable and
// no other data source.
package dashboards

//go:generate go run ./gen

import (
	"encoding/json"
	"fmt"
)

// Panel is one time-series (or stat) panel.
type Panel struct {
	Title string
	Unit  string   // Grafana unit: "short", "s", "bytes", "percentunit", "ops"
	Exprs []string // one target each
	Stat  bool     // a single-value stat panel instead of a graph
}

// Dashboard is one dashboard.
type Dashboard struct {
	UID, Title string
	Panels     []Panel
}

const (
	jobSel = `queue=~"$queue",backend=~"$backend"`
	ri     = "$__rate_interval"
)

// All is every dashboard, in file order.
var All = []Dashboard{
	{UID: "sandrun-overview", Title: "sandrun / Overview", Panels: []Panel{
		{Title: "Finished jobs by status", Unit: "ops", Exprs: []string{
			`sum by (status) (rate(sandrun_jobs_finished_total{` + jobSel + `}[` + ri + `]))`}},
		{Title: "Success rate", Unit: "percentunit", Stat: true, Exprs: []string{
			`sum(rate(sandrun_jobs_finished_total{status="succeeded",` + jobSel + `}[` + ri + `])) / sum(rate(sandrun_jobs_finished_total{` + jobSel + `}[` + ri + `]))`}},
		{Title: "Jobs running", Unit: "short", Exprs: []string{`sum by (queue) (sandrun_jobs_running{queue=~"$queue"})`}},
		{Title: "Queue depth", Unit: "short", Exprs: []string{`sum by (queue) (sandrun_queue_depth{queue=~"$queue"})`}},
		{Title: "Queue wait (submit to start), p50 and p95", Unit: "s", Exprs: []string{
			`histogram_quantile(0.5, sum by (le) (rate(sandrun_submit_to_start_seconds_bucket[` + ri + `])))`,
			`histogram_quantile(0.95, sum by (le) (rate(sandrun_submit_to_start_seconds_bucket[` + ri + `])))`}},
		{Title: "Run duration p95 by backend", Unit: "s", Exprs: []string{
			`histogram_quantile(0.95, sum by (le, backend) (rate(sandrun_job_run_duration_seconds_bucket{` + jobSel + `}[` + ri + `])))`}},
		{Title: "Retries", Unit: "ops", Exprs: []string{`sum by (queue) (rate(sandrun_retries_total{queue=~"$queue"}[` + ri + `]))`}},
		{Title: "Dead-letter queue", Unit: "short", Stat: true, Exprs: []string{`sandrun_dlq_messages`}},
		{Title: "Worker slots", Unit: "short", Stat: true, Exprs: []string{`sum(sandrun_worker_slots)`}},
	}},
	{UID: "sandrun-backends", Title: "sandrun / Backends", Panels: []Panel{
		{Title: "Backend errors by kind", Unit: "short", Exprs: []string{
			`sum by (backend, kind) (increase(sandrun_backend_errors_total{backend=~"$backend"}[` + ri + `]))`}},
		{Title: "Script timeouts", Unit: "short", Exprs: []string{
			`sum by (backend) (increase(sandrun_script_timeouts_total{backend=~"$backend"}[` + ri + `]))`}},
		{Title: "OOM kills", Unit: "short", Exprs: []string{
			`sum by (backend) (increase(sandrun_oom_kills_total{backend=~"$backend"}[` + ri + `]))`}},
		{Title: "Host-access refusals", Unit: "short", Exprs: []string{
			`sum by (backend) (increase(sandrun_host_access_refusals_total{backend=~"$backend"}[` + ri + `]))`}},
		{Title: "Run duration p50 / p95 by backend", Unit: "s", Exprs: []string{
			`histogram_quantile(0.5, sum by (le, backend) (rate(sandrun_job_run_duration_seconds_bucket{` + jobSel + `}[` + ri + `])))`,
			`histogram_quantile(0.95, sum by (le, backend) (rate(sandrun_job_run_duration_seconds_bucket{` + jobSel + `}[` + ri + `])))`}},
		{Title: "Outcomes by backend", Unit: "ops", Exprs: []string{
			`sum by (backend, status) (rate(sandrun_jobs_finished_total{` + jobSel + `}[` + ri + `]))`}},
		{Title: "Orphaned workloads removed", Unit: "short", Exprs: []string{
			`sum by (backend) (increase(sandrun_orphans_reaped_total{backend=~"$backend"}[` + ri + `]))`}},
	}},
	{UID: "sandrun-leases", Title: "sandrun / Leases and recovery", Panels: []Panel{
		{Title: "Lease renewals", Unit: "ops", Exprs: []string{`sum(rate(sandrun_lease_renewals_total[` + ri + `]))`}},
		{Title: "Lease losses (self-fenced jobs)", Unit: "short", Exprs: []string{`sum(increase(sandrun_lease_losses_total[` + ri + `]))`}},
		{Title: "Stale commits rejected", Unit: "short", Exprs: []string{`sum(increase(sandrun_stale_commits_rejected_total[` + ri + `]))`}},
		{Title: "Reaper recoveries by action", Unit: "short", Exprs: []string{
			`sum by (action) (increase(sandrun_reaper_recoveries_total[` + ri + `]))`}},
		{Title: "Leaders", Unit: "short", Exprs: []string{`sum by (role) (sandrun_leader)`}},
		{Title: "Leader changes", Unit: "short", Exprs: []string{`sum by (role) (increase(sandrun_leader_changes_total[` + ri + `]))`}},
	}},
	{UID: "sandrun-scheduler", Title: "sandrun / Scheduler", Panels: []Panel{
		{Title: "Fires by kind", Unit: "short", Exprs: []string{`sum by (kind) (increase(sandrun_schedule_fires_total[` + ri + `]))`}},
		{Title: "Skipped slots by reason", Unit: "short", Exprs: []string{`sum by (reason) (increase(sandrun_schedule_skipped_total[` + ri + `]))`}},
		{Title: "Missed slots", Unit: "short", Exprs: []string{`sum(increase(sandrun_schedule_missed_total[` + ri + `]))`}},
		{Title: "Fire errors", Unit: "short", Exprs: []string{`sum(increase(sandrun_schedule_fire_errors_total[` + ri + `]))`}},
		{Title: "Fire lag p99", Unit: "s", Exprs: []string{
			`histogram_quantile(0.99, sum by (le) (rate(sandrun_schedule_fire_lag_seconds_bucket[` + ri + `])))`}},
		{Title: "Schedules loaded", Unit: "short", Stat: true, Exprs: []string{`max(sandrun_schedules)`}},
		{Title: "Scheduler leader", Unit: "short", Stat: true, Exprs: []string{`max(sandrun_leader{role="scheduler"})`}},
	}},
	{UID: "sandrun-policy", Title: "sandrun / Approval policy", Panels: []Panel{
		{Title: "Decisions", Unit: "short", Exprs: []string{`sum by (decision) (increase(sandrun_policy_decisions_total[` + ri + `]))`}},
		{Title: "Denials by rule (top 10)", Unit: "short", Exprs: []string{
			`topk(10, sum by (rule) (increase(sandrun_policy_decisions_total{decision="deny"}[` + ri + `])))`}},
		{Title: "Decisions by mode", Unit: "short", Exprs: []string{`sum by (mode) (increase(sandrun_policy_decisions_total[` + ri + `]))`}},
	}},
	{UID: "sandrun-sif", Title: "sandrun / SIF cache", Panels: []Panel{
		{Title: "Cache size and budget", Unit: "bytes", Exprs: []string{`sum by (instance, backend) (sandrun_sif_cache_bytes)`, `max by (instance, backend) (sandrun_sif_cache_budget_bytes)`}},
		{Title: "Images", Unit: "short", Exprs: []string{`sum by (instance, backend) (sandrun_sif_cache_images)`}},
		{Title: "Hit ratio", Unit: "percentunit", Stat: true, Exprs: []string{
			`sum(rate(sandrun_sif_cache_hits_total[` + ri + `])) / (sum(rate(sandrun_sif_cache_hits_total[` + ri + `])) + sum(rate(sandrun_sif_cache_misses_total[` + ri + `])))`}},
		{Title: "Hits and misses", Unit: "ops", Exprs: []string{`sum(rate(sandrun_sif_cache_hits_total[` + ri + `]))`, `sum(rate(sandrun_sif_cache_misses_total[` + ri + `]))`}},
		{Title: "Evictions by reason", Unit: "short", Exprs: []string{`sum by (reason) (increase(sandrun_sif_cache_evictions_total[` + ri + `]))`}},
		{Title: "Pulls by result", Unit: "short", Exprs: []string{`sum by (result) (increase(sandrun_sif_pulls_total[` + ri + `]))`}},
		{Title: "Pull duration p95", Unit: "s", Exprs: []string{`histogram_quantile(0.95, sum by (le) (rate(sandrun_sif_pull_seconds_bucket[` + ri + `])))`}},
	}},
	{UID: "sandrun-nats", Title: "sandrun / NATS and JetStream", Panels: []Panel{
		{Title: "Pending per queue consumer", Unit: "short", Exprs: []string{`sum by (queue) (sandrun_queue_depth{queue=~"$queue"})`}},
		{Title: "Ack pending per queue consumer", Unit: "short", Exprs: []string{`sum by (queue) (sandrun_queue_ack_pending{queue=~"$queue"})`}},
		{Title: "Redelivered per queue consumer", Unit: "short", Exprs: []string{`sum by (queue) (sandrun_queue_redelivered{queue=~"$queue"})`}},
		{Title: "Stream bytes", Unit: "bytes", Exprs: []string{`max by (stream) (sandrun_stream_bytes)`}},
		{Title: "Stream messages", Unit: "short", Exprs: []string{`max by (stream) (sandrun_stream_messages)`}},
		{Title: "JetStream state read errors", Unit: "short", Exprs: []string{`sum(increase(sandrun_jetstream_state_errors_total[` + ri + `]))`}},
		{Title: "Embedded server: connections", Unit: "short", Exprs: []string{`sum(sandrun_nats_connections)`}},
		{Title: "Embedded server: messages in and out", Unit: "ops", Exprs: []string{
			`sum(rate(sandrun_nats_in_messages_total[` + ri + `]))`, `sum(rate(sandrun_nats_out_messages_total[` + ri + `]))`}},
		{Title: "Embedded server: JetStream storage", Unit: "bytes", Exprs: []string{
			`sum(sandrun_nats_jetstream_store_bytes)`, `sum(sandrun_nats_jetstream_memory_bytes)`}},
		{Title: "Embedded server: JetStream API errors", Unit: "short", Exprs: []string{`sum(increase(sandrun_nats_jetstream_api_errors_total[` + ri + `]))`}},
	}},
}

// datasource is the one data source every panel and variable uses.
var datasource = map[string]string{"type": "prometheus", "uid": "${datasource}"}

// Render returns the Grafana JSON model of d.
func Render(d Dashboard) ([]byte, error) {
	var panels []map[string]any
	for i, p := range d.Panels {
		kind := "timeseries"
		w, h := 12, 8
		if p.Stat {
			kind, w = "stat", 6
		}
		var targets []map[string]any
		for j, e := range p.Exprs {
			targets = append(targets, map[string]any{
				"datasource": datasource, "expr": e, "refId": string(rune('A' + j)), "legendFormat": "__auto",
			})
		}
		panels = append(panels, map[string]any{
			"id": i + 1, "type": kind, "title": p.Title, "datasource": datasource,
			"gridPos":     map[string]int{"x": (i % 2) * 12, "y": (i / 2) * h, "w": w, "h": h},
			"fieldConfig": map[string]any{"defaults": map[string]any{"unit": p.Unit}, "overrides": []any{}},
			"options":     map[string]any{"legend": map[string]any{"displayMode": "list", "placement": "bottom"}},
			"targets":     targets,
		})
	}
	variable := func(name, label, query string) map[string]any {
		return map[string]any{
			"name": name, "label": label, "type": "query", "datasource": datasource,
			"query":      map[string]any{"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
			"definition": query, "includeAll": true, "allValue": ".*", "multi": true, "refresh": 2, "sort": 1,
			"current": map[string]any{"text": "All", "value": "$__all"},
		}
	}
	model := map[string]any{
		"uid": d.UID, "title": d.Title, "tags": []string{"sandrun"}, "timezone": "browser",
		"schemaVersion": 39, "version": 1, "editable": true, "refresh": "30s",
		"time":   map[string]string{"from": "now-6h", "to": "now"},
		"panels": panels,
		"templating": map[string]any{"list": []any{
			map[string]any{"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
				"current": map[string]any{}, "hide": 0},
			variable("queue", "Queue", "label_values(sandrun_jobs_claimed_total, queue)"),
			variable("backend", "Backend", "label_values(sandrun_jobs_claimed_total, backend)"),
		}},
		"annotations": map[string]any{"list": []any{}},
	}
	out, err := json.MarshalIndent(model, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("dashboard %s: %w", d.UID, err)
	}
	return append(out, '\n'), nil
}

// FileName is the JSON file of d.
func FileName(d Dashboard) string { return d.UID + ".json" }
