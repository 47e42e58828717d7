.DEFAULT_GOAL := help

help: ## Show this help
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

test: ## Run every test (installs what the tests need); CI runs this
	./scripts/test.sh

demo: ## Run the example jobs on the embedded default and exit
	go run ./cmd/sandrun dev --demo --data $$(mktemp -d)

dev: ## Embedded NATS + worker + scheduler until Ctrl-C
	go run ./cmd/sandrun dev

bench: ## Throughput and latency on the embedded default (see docs/BENCHMARKS.md)
	go run ./cmd/sandrun-bench

compare: ## sandrun (R1 and a 3-node cluster) next to asynq+redis and River+PostgreSQL (bench/; needs redis-server and postgresql)
	cd bench && go run . -jobs 5000 -concurrency 8

fuzz: ## Fuzz the job decoder and the policy parser for 30s each
	go test ./internal/jobs -run '^$$' -fuzz FuzzDecodeJSON -fuzztime 30s
	go test ./internal/policy -run '^$$' -fuzz FuzzDecide -fuzztime 30s

lint: ## golangci-lint v2 (downloads it through the Go module proxy)
	go run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0 run ./...

.PHONY: help test demo dev bench compare fuzz lint
