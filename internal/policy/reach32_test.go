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
		// npx runs a package's program: its version and scope are not its name
		{`npx -y @anthropic-ai/claude-code@2.0.14 --dangerously-skip-permissions -p "fix the build"`, "agents:approvals-off"},
		{`npx -y @openai/codex@0.46.0 exec --dangerously-bypass-approvals-and-sandbox "fix lint"`, "agents:approvals-off"},
		{`pnpm dlx vercel@39 remove my-app --yes`, "cloud:resource-delete"},
		{`npx -y @anthropic-ai/claude-code@latest -p "summarise the README"`, ""},
		{`npx prettier@3 --write .`, ""},
		// agents' settings and launches
		{`claude --settings '{"permissions":{"defaultMode":"bypassPermissions"}}' -p "tidy the docs"`, "agents:approvals-off"},
		{`claude --settings '{"permissions":{"deny":["Bash(curl:*)"]}}' -p "tidy the docs"`, ""},
		{`gemini -p "triage the tests" --allowed-tools run_shell_command`, "agents:approvals-off"},
		{`gemini -p "triage the tests" --allowed-tools "run_shell_command(git status)"`, ""},
		{`gemini mcp add --trust shell npx -y mcp-server-shell@latest`, "agents:approvals-off"},
		{`cn --auto -p "update the API docs"`, "agents:approvals-off"},
		{`claude setup-token`, "secrets:secret-print"},
		{`claude mcp remove helper -s user`, ""},
		{`jq '.permissions.disableBypassPermissionsMode = "disable"' ~/.claude/settings.json > /tmp/s.json && mv /tmp/s.json ~/.claude/settings.json`, ""},
		{`jq '."amp.dangerouslyAllowAll"' ~/.config/amp/settings.json`, ""},
		{`jq '."amp.dangerouslyAllowAll" = true' ~/.config/amp/settings.json > /tmp/a.json`, "agents:approval-config"},
		{"mkdir -p .roo && cat > .roo/mcp.json <<'EOF'\n{\"mcpServers\":{\"dc\":{\"command\":\"npx\",\"args\":[\"-y\",\"desktop-commander\"],\"alwaysAllow\":[\"start_process\",\"write_file\"]}}}\nEOF", "agents:approval-config"},
		{"mkdir -p .roo && cat > .roo/mcp.json <<'EOF'\n{\"mcpServers\":{\"docs\":{\"command\":\"npx\",\"args\":[\"-y\",\"docs-mcp\"],\"alwaysAllow\":[\"search_docs\"]}}}\nEOF", ""},
		{"printf '[core]\\nruntime = \"local\"\\n[security]\\nconfirmation_mode = false\\n' > config.toml", "agents:approval-config"},
		// a configured command's output goes to the program that runs it
		{`jq '.apiKeyHelper = "op read op://Dev/Anthropic/credential"' ~/.claude/settings.json > /tmp/k.json && mv /tmp/k.json ~/.claude/settings.json`, ""},
		{`jq '.apiKeyHelper = "cat ~/.aws/credentials"' ~/.claude/settings.json > /tmp/k.json`, "paths:credential-read"},
		{`printenv OPENAI_API_KEY | codex login --with-api-key`, ""},
		{`cat ~/.config/anthropic/api_key`, ""}, // left: a key file by a name of the tool's choosing; refusing it refused its use against its own API
		// HPC and data platforms
		{"apptainer exec docker://alpine:3.19 sh -c 'rm -rf \"$HOME\"/*'", "rm-root"},
		{`apptainer exec pytorch.sif bash -c 'rm -rf ~/.ssh ~/.bashrc'`, "paths:credential-destroy"},
		{`singularity exec -B /home:/home centos7.sif rm -rf /home/*`, "rm-root"},
		{`apptainer exec --bind /scratch/$USER:/data pytorch.sif python train.py`, ""},
		{`apptainer exec docker://alpine:3.19 rm -rf /tmp/build`, ""},
		{`apptainer cache clean --force`, ""},
		{`squeue -h -o %i | xargs scancel`, "hpc:jobs-cancel"},
		{`scancel -u $USER --state=PENDING`, ""},
		{`databricks api post /api/2.1/jobs/delete --json '{"job_id": 987654}'`, "api:action"},
		{`databricks api post /api/2.0/sql/statements --json '{"warehouse_id":"abc","statement":"DROP TABLE main.sales.orders"}'`, "data:sql-over-http"},
		{`databricks api get /api/2.1/jobs/list`, ""},
		{`databricks api post /api/2.1/jobs/run-now --json '{"job_id": 1}'`, ""},
		{`airflow users delete --username alice`, "data:metadata-reset"},
		{`ray down -y cluster.yaml`, "hpc:cluster-down"},
		{`ray up -y cluster.yaml`, ""},
		{`sudo nvidia-smi -q -d PERFORMANCE`, ""},
		{`sudo nvidia-smi --query-gpu=name,memory.used --format=csv`, ""},
		{`sudo nvidia-smi -i 0 -pm 1`, "privilege"},
		{`sudo nvidia-smi -f /etc/passwd -q`, "privilege"},
		{`sudo scontrol show config`, ""},
		// hypervisors and devices
		{`virsh -c qemu:///system undefine ci-runner-3 --storage vda,vdb`, "generic:data-delete-option"},
		{`virsh pool-list --all --details`, ""},
		{`rm -f /var/lib/vz/dump/vzdump-qemu-101-*.vma.zst`, "rm-root"},
		{`timeout 120 fastboot format:ext4 userdata`, "devices:volume-destroy"},
		{`heimdall flash --RECOVERY twrp.img --no-reboot`, "devices:volume-destroy"},
		{`heimdall print-pit --no-reboot`, ""},
		{`adb shell run-as com.example.myapp rm -rf cache`, ""},
		// directories and identity
		{"printf 'dn: cn=developers,ou=Groups,dc=example,dc=com\\nchangetype: modify\\ndelete: member\\n' | ldapmodify -x -H ldap://ldap.example.com -D cn=admin,dc=example,dc=com -y .ldap.pw", "secrets:directory-delete"},
		{"printf 'dn: cn=developers,ou=Groups,dc=example,dc=com\\nchangetype: modify\\ndelete: member\\nmember: uid=bob,ou=People,dc=example,dc=com\\n' | ldapmodify -x -y .ldap.pw", ""},
		{"cat > purge.ldif <<'EOF'\ndn: uid=alice,ou=People,dc=example,dc=com\nchangetype: delete\nEOF\nldapmodify -x -D cn=admin -y pw -f purge.ldif", "secrets:directory-delete"},
		{`sudo samba-tool user list`, ""},
		{`sudo samba-tool domain passwordsettings show`, ""},
		{`sudo samba-tool dbcheck --cross-ncs`, ""},
		{`sudo samba-tool dbcheck --fix --yes`, "privilege"},
		{`sudo samba-tool user getpassword bob`, "privilege"},
		{`ipa user-mod jdoe --random`, "secrets:password-reset"},
		{`for u in $(cat leavers.txt); do ipa user-disable "$u"; done`, "secrets:account-disable"},
		{`gam update user jdoe@example.com suspended on`, "secrets:account-disable"},
		{`gam update user jdoe@example.com suspended off`, ""},
		{`gam user jdoe@example.com delete messages query "before:2023/01/01" doit`, "secrets:resource-delete"},
		{`gam info user jdoe@example.com`, ""},
		// what a secret store prints is a secret wherever it is kept
		{`x=$(vault kv get -field=password secret/db); echo "$x"`, "secrets:secret-print"},
		{`x=$(vault kv get -format=json secret/db | jq -r .data.data.password); printf '%s\n' "$x"`, "secrets:secret-print"},
		{`x=$(printenv AWS_SECRET_ACCESS_KEY); echo "$x"`, "secrets:secret-print"},
		{`TOKEN=$(op read op://Dev/api/token) && curl -H "Authorization: Bearer $TOKEN" https://api.example.com/v1/me`, ""},
		{`PGPASSWORD=$(vault kv get -field=password secret/db) psql -h db -c 'select 1'`, ""},
		{`n=$(env | wc -l); echo "$n"`, ""},
		{`n=$(env | grep -c AWS_); echo "$n variables"`, ""},
		{`x=$(sh -c 'vault kv get -field=password secret/db'); echo "$x"`, "secrets:secret-print"}, // the nested shell's own command is judged as printing
	})
}
