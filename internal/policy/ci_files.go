package policy

import (
	"errors"
	"io"
	"path"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// ciFiles are the pipeline definitions a CI service reads from a
// repository; their steps run on its runners, with the repository's
// secrets, when the file is pushed.
var ciFiles = map[string]bool{
	".gitlab-ci.yml": true, "bitbucket-pipelines.yml": true, ".drone.yml": true, ".woodpecker.yml": true,
	".travis.yml": true, "azure-pipelines.yml": true, "buildspec.yml": true, "cloudbuild.yaml": true,
	"cloudbuild.yml": true, ".cirrus.yml": true, "appveyor.yml": true, ".appveyor.yml": true, "codemagic.yaml": true,
	"action.yml": true, "action.yaml": true, // a composite action's steps
}

// ciDirs are the directories whose YAML files are pipelines.
var ciDirs = []string{"/.github/workflows/", "/.gitea/workflows/", "/.forgejo/workflows/", "/.woodpecker/", "/.gitlab/ci/"}

// isCIFile reports a CI pipeline definition by its place in a repository.
func isCIFile(p string) bool {
	base := path.Base(p)
	if ciFiles[base] {
		return true
	}
	if !strings.HasSuffix(base, ".yml") && !strings.HasSuffix(base, ".yaml") {
		return false
	}
	dir := "/" + path.Dir(p) + "/"
	for _, d := range ciDirs {
		if strings.HasSuffix(dir, d) {
			return true
		}
	}
	return (strings.HasSuffix(dir, "/.circleci/") || strings.HasSuffix(dir, "/.buildkite/")) &&
		(strings.HasPrefix(base, "config.") || strings.HasPrefix(base, "pipeline."))
}

// ciStepKeys are the keys whose values are shell steps in the CI services'
// pipeline formats: GitHub's run, GitLab's script lists, CircleCI's run and
// command, Drone's and CodeBuild's commands, Travis's phases, Azure's
// script and bash; a key ending in _script or -script (Cirrus, AppVeyor,
// Bitbucket's after-script) too.
var ciStepKeys = map[string]bool{
	"run": true, "script": true, "before_script": true, "after_script": true, "commands": true, "command": true,
	"bash": true, "install": true, "before_install": true, "after_success": true, "after_failure": true,
	"before_deploy": true, "deploy_script": true, "build_script": true, "test_script": true, "before_build": true,
}

func ciStepKey(k string) bool {
	return ciStepKeys[k] || strings.HasSuffix(k, "_script") || strings.HasSuffix(k, "-script")
}

// ciExpr is an expression the CI service substitutes before the shell runs
// the step: ${{ secrets.NAME }} becomes the secret itself, written here as a
// variable of its name so that the rules that guard secrets see it.
var ciExpr = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// ciSecretExpr is a reference to a secret or an environment value.
var ciSecretExpr = regexp.MustCompile(`^(?:secrets|env|vars)(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[\s*'([A-Za-z_][A-Za-z0-9_]*)'\s*\])$`)

// ciStringExpr is an expression that is a string literal: its text.
var ciStringExpr = regexp.MustCompile(`^'((?:[^']|'')*)'$`)

// ciExprText is what the shell gets in place of a ${{ }} expression.
func ciExprText(m string) string {
	e := ciExpr.FindStringSubmatch(m)[1]
	switch sm := ciSecretExpr.FindStringSubmatch(e); {
	case sm != nil:
		return "${" + sm[1] + sm[2] + "}"
	case ciStringExpr.MatchString(e):
		return strings.ReplaceAll(ciStringExpr.FindStringSubmatch(e)[1], "''", "'")
	case e == "github.token":
		return "${GITHUB_TOKEN}"
	case strings.Contains(e, "secrets"):
		return "${ALL_SECRETS}" // toJSON(secrets), format('{0}', secrets.X): secret values
	}
	return "x"
}

// ciDefinitionCommands returns the shell steps of a CI pipeline definition
// (in text), each as a command line for the shell that runs it, and
// whether it was read: a file that is not YAML is not.
func ciDefinitionCommands(text string) ([]string, bool) {
	var out []string
	dec := yaml.NewDecoder(strings.NewReader(text))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, false
		}
		out = append(out, ciSteps(&doc, "", "")...)
	}
	return out, true
}

// ciSubstitute writes a step's ${{ }} expressions as what the shell gets:
// a value inside single quotes is written so that the shell still reads
// it as the variable (echo '${{ secrets.X }}' prints the secret).
func ciSubstitute(step string) string {
	if !strings.Contains(step, "${{") {
		return step
	}
	var b strings.Builder
	last := 0
	for _, m := range ciExpr.FindAllStringIndex(step, -1) {
		b.WriteString(step[last:m[0]])
		t := ciExprText(step[m[0]:m[1]])
		if open, _ := shellQuotes(step[:m[0]]); strings.HasPrefix(t, "${") && open == '\'' {
			t = `'"` + t + `"'`
		}
		b.WriteString(t)
		last = m[1]
	}
	b.WriteString(step[last:])
	return b.String()
}

// ciSteps walks node n (the value of key parent) and returns its steps.
// shell is the default shell a defaults: run: shell: above set.
func ciSteps(n *yaml.Node, parent, shell string) []string {
	var out []string
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			out = append(out, ciSteps(c, parent, shell)...)
		}
	case yaml.AliasNode:
		// an alias repeats an anchor that is walked where it is defined
	case yaml.MappingNode:
		if d := mapValue(mapValue(mapValue(n, "defaults"), "run"), "shell"); d != nil && d.Kind == yaml.ScalarNode {
			shell = d.Value // defaults: run: shell: pwsh for the jobs or steps below
		}
		stepShell := shell
		if s := mapValue(n, "shell"); s != nil && s.Kind == yaml.ScalarNode {
			stepShell = s.Value
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch {
			case k.Kind != yaml.ScalarNode:
			case parent == "with" || parent == "env" || parent == "variables":
				// an action's inputs (actions/github-script's script is
				// JavaScript) and variables are not steps
			case ciStepKey(k.Value):
				out = append(out, ciWrap(stepShell, ciScalars(v))...)
			case k.Value == "pwsh" || k.Value == "powershell": // Azure's PowerShell steps
				out = append(out, ciWrap(k.Value, ciScalars(v))...)
			}
			out = append(out, ciSteps(v, k.Value, shell)...)
		}
	}
	return out
}

// mapValue returns the value of key k of mapping n, or nil.
func mapValue(n *yaml.Node, k string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k {
			return n.Content[i+1]
		}
	}
	return nil
}

// ciScalars returns the shell text of a step key's value: a string, or a
// list of strings (GitLab's script); an alias is read as what it names.
func ciScalars(v *yaml.Node) []string {
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!str" {
			return []string{ciSubstitute(v.Value)}
		}
	case yaml.SequenceNode:
		var out []string
		for _, c := range v.Content {
			out = append(out, ciScalars(c)...)
		}
		return out
	}
	return nil
}

// ciWrap writes each step as the command line that runs it: bash (the
// runners' default shell for a step) unless a shell: says otherwise, so
// that it is judged in its own dialect or language.
func ciWrap(shell string, steps []string) []string {
	prog, opt := "bash", "-c"
	switch f := strings.Fields(shell); {
	case len(f) == 0 || f[0] == "bash":
	case f[0] == "sh":
		prog = "sh"
	case f[0] == "pwsh" || f[0] == "powershell":
		prog, opt = f[0], "-Command"
	case f[0] == "python" || f[0] == "python3":
		prog = "python3"
	case f[0] == "node":
		opt = "-e"
		prog = "node"
	case f[0] == "perl", f[0] == "ruby":
		prog, opt = f[0], "-e"
	case f[0] == "cmd":
		prog, opt = "cmd", "/c"
	}
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = prog + " " + opt + " '" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return out
}
