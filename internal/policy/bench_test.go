package policy

import (
	"testing"
)

// agentCommands are typical commands an agent job runs.
var agentCommands = []string{
	"go test ./...",
	"git status",
	"npm ci && npm test",
	"python -m pytest -q",
	"ls -la",
	"cat README.md | head",
	"pip install -r requirements.txt",
	"make build",
	"docker build -t x .",
	"find . -name '*.go' | xargs wc -l",
	"set -e\ncd app\ncat > .env <<EOF\nPORT=8080\nEOF\nnpm run build",
	"git add -A && git commit -m 'wip: fix tests'",
	"go vet ./... && golangci-lint run",
	"rm -rf ./build && mkdir -p build",
	"curl -fsSL https://example.com/data.json -o data.json",
	"grep -rn 'TODO' src/ | wc -l",
	"cargo build --release",
	"python3 -c 'import sys; print(sys.version)'",
	"export PATH=\"$HOME/.local/bin:$PATH\"; uv run pytest",
	"kubectl get pods -n default -o wide",
	"terraform plan -out=tfplan",
	"aws s3 ls s3://acme-artifacts/builds/",
	"gh pr list --state open",
	"docker compose up -d --build",
	"helm list -A",
	"git checkout -b feature/search main",
	"npx prisma migrate dev --name init",
}

// BenchmarkDecide measures decisions per second over typical agent
// commands. Run it on one core with: go test -run '^$' -bench BenchmarkDecide -cpu 1 ./internal/policy/
func BenchmarkDecide(b *testing.B) {
	e, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	reqs := make([]Request, len(agentCommands))
	for i, c := range agentCommands {
		reqs[i] = Request{Command: c, Origin: "subagent", Mode: ModeDeny}
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if d := e.Decide(reqs[n%len(reqs)]); !d.Allow {
			b.Fatalf("typical command denied: %s", d.Reason)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "decisions/s")
}
