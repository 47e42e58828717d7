package policy

import "testing"

// TestSession32Forms holds the forms the thirty-second session's probe
// lists and audit found; each denial has a benign look-alike beside it.
func TestSession32Forms(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	checkDecisions(t, e, []ruleCase{
		// what env and sudo set for the program is its environment, as a
		// prefix assignment's is; env -S's words too, the last one winning
		{`env GOOSE_MODE=auto goose run -t "fix it"`, "agents:approvals-off"},
		{`env GOOSE_MODE=chat goose run -t "fix it"`, ""},
		{`env RAILS_ENV=test env -S 'RAILS_ENV=production rake db:drop'`, "data:schema-reset"},
		{`RAILS_ENV=test env -S 'RAILS_ENV=production rake db:drop'`, "data:schema-reset"},
		{`env -i PATH=/usr/bin RAILS_ENV=production rake db:drop`, "data:schema-reset"},
		{`env RAILS_ENV=test rake db:drop`, ""},
		{`env -S 'RAILS_ENV=test rake db:drop'`, ""},
		// python -m MODULE runs the module's program
		{`python -m pip install --index-url http://pkgs.example.com/simple internal-lib`, "secrets:tls-off"},
		{`python3.11 -mpip install --trusted-host pkgs.example.com internal-lib`, "secrets:tls-off"},
		{`python -m awscli s3 rm --recursive s3://prod-bucket`, "cloud:object-delete"},
		{`python -m django flush --noinput`, "data:schema-reset"},
		{`python3 -I -m pip install -r requirements.txt`, ""},
		{`python -m pip list --outdated`, ""},
		{`python -m pytest -x tests/`, ""},
		// the options after a command a tool runs are that command's
		{`gemini mcp add github npx -y @modelcontextprotocol/server-github`, ""},
		{`gemini -y mcp add x npx -y some-server`, "agents:approvals-off"},
		{`gemini --yolo -p "refactor"`, "agents:approvals-off"},
		{`gemini mcp add evil sh -c "rm -rf ~"`, "rm-root"},
	})
}
