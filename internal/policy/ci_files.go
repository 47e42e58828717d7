package policy

import (
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
}

// isCIFile reports a CI pipeline definition by its place in a repository.
func isCIFile(p string) bool {
	base := path.Base(p)
	yml := strings.HasSuffix(base, ".yml") || strings.HasSuffix(base, ".yaml")
	switch dir := "/" + path.Dir(p) + "/"; {
	case ciFiles[base]:
		return true
	case !yml:
		return false
	case strings.HasSuffix(dir, "/.github/workflows/"), strings.HasSuffix(dir, "/.woodpecker/"), strings.HasSuffix(dir, "/.gitlab/ci/"):
		return true
	case strings.HasSuffix(dir, "/.circleci/"), strings.HasSuffix(dir, "/.buildkite/"):
		return strings.HasPrefix(base, "config.") || strings.HasPrefix(base, "pipeline.")
	}
	return false
}

// ciStepKeys are the keys whose values are shell steps in the CI services'
// pipeline formats: GitHub's run, GitLab's script lists, CircleCI's run and
// command, Drone's and CodeBuild's commands, Travis's phases, Azure's
// script and bash.
var ciStepKeys = map[string]bool{
	"run": true, "script": true, "before_script": true, "after_script": true, "commands": true, "command": true,
	"bash": true, "install": true, "before_install": true, "after_success": true, "after_failure": true,
	"before_deploy": true, "deploy_script": true,
}

// ciExpr is an expression the CI service substitutes before the shell runs
// the step: ${{ secrets.NAME }} becomes the secret itself, written here as a
// variable of its name so that the rules that guard secrets see it.
var ciExpr = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// ciSecretExpr is a reference to a secret or an environment value.
var ciSecretExpr = regexp.MustCompile(`^(?:secrets|env|vars)\.([A-Za-z_][A-Za-z0-9_]*)$`)

// ciDefinitionCommands returns the shell steps of a CI pipeline definition
// (in text), and whether it was read: a file that is not YAML is not.
func ciDefinitionCommands(text string) ([]string, bool) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(text), &root); err != nil {
		return nil, false
	}
	var out []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c)
			}
		case yaml.AliasNode:
			// an alias repeats an anchor that is walked where it is defined
		case yaml.MappingNode:
			shell := "" // GitHub's shell: of a step (pwsh, python, cmd)
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k, v := n.Content[i], n.Content[i+1]; k.Value == "shell" && v.Kind == yaml.ScalarNode {
					shell = v.Value
				}
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				switch {
				case k.Kind != yaml.ScalarNode:
				case ciStepKeys[k.Value]:
					out = append(out, ciWrap(shell, ciSteps(v))...)
				case k.Value == "pwsh" || k.Value == "powershell": // Azure's PowerShell steps
					out = append(out, ciWrap(k.Value, ciSteps(v))...)
				}
				walk(v)
			}
		}
	}
	walk(&root)
	for i, s := range out {
		out[i] = ciExpr.ReplaceAllStringFunc(s, func(m string) string {
			if sm := ciSecretExpr.FindStringSubmatch(ciExpr.FindStringSubmatch(m)[1]); sm != nil {
				return "${" + sm[1] + "}"
			}
			return "x"
		})
	}
	return out, true
}

// ciSteps returns the shell text of a step key's value: a string, or a
// list of strings (GitLab's script).
func ciSteps(v *yaml.Node) []string {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!str" {
			return []string{v.Value}
		}
	case yaml.SequenceNode:
		var out []string
		for _, c := range v.Content {
			if c.Kind == yaml.ScalarNode && c.Tag == "!!str" {
				out = append(out, c.Value)
			}
		}
		return out
	}
	return nil
}

// ciWrap writes steps that a step's shell (GitHub's shell:, Azure's pwsh:)
// runs in another language as the shell command that would run them, so
// that they are judged in their own language.
func ciWrap(shell string, steps []string) []string {
	prog, opt := "", ""
	switch f := strings.Fields(shell); {
	case len(f) == 0 || f[0] == "bash" || f[0] == "sh":
		return steps
	case f[0] == "pwsh" || f[0] == "powershell":
		prog, opt = f[0], "-Command"
	case f[0] == "python" || f[0] == "python3":
		prog, opt = "python3", "-c"
	case f[0] == "node":
		prog, opt = "node", "-e"
	case f[0] == "cmd":
		prog, opt = "cmd", "/c"
	default:
		prog, opt = "sh", "-c" // a custom shell ({0} template): read as sh
	}
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = prog + " " + opt + " '" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return out
}
