package nomad_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

var (
	// credentialName matches names of things that hold credentials.
	credentialName = regexp.MustCompile(`(?i)(password|passwd|secret|token|seed|jwt|creds|credential|api_?key)`)
	// assignment is a "key: value" or "key = value" line of a rendered file.
	assignment = regexp.MustCompile(`^\s*"?([A-Za-z0-9_.-]+)"?\s*[:=]\s*(.*?)\s*,?\s*$`)
	// userinfo is the user:password part of a URL.
	userinfo = regexp.MustCompile(`://([^/@\s"]+)@`)
	// templateAction is one {{ ... }} of a template.
	templateAction = regexp.MustCompile(`\{\{.*?\}\}`)
	// Key material that must never be in a job file: JWTs (NATS operator,
	// account and user JWTs start like every JWT) and nkey seeds.
	jwtLike  = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{10,}\.`)
	nkeySeed = regexp.MustCompile(`\bS[OAU][A-Z2-7]{50,}`)
	// nomadVarPath is the path of a Nomad variable read by a template.
	nomadVarPath = regexp.MustCompile(`nomadVar "([^"]*)"`)
)

// Credentials come from Nomad variables through templates, rendered into
// the task's secrets/ directory; the job files hold none.
func TestNoCredentialsInJobFiles(t *testing.T) {
	t.Parallel()
	for _, f := range loadJobFiles(t) {
		src := string(f.src)
		if loc := jwtLike.FindStringIndex(src); loc != nil {
			t.Errorf("%s: a JWT at byte %d", f.name, loc[0])
		}
		if loc := nkeySeed.FindStringIndex(src); loc != nil {
			t.Errorf("%s: an nkey seed at byte %d", f.name, loc[0])
		}
		if strings.Contains(src, "-----BEGIN") {
			t.Errorf("%s: PEM or creds block", f.name)
		}

		for name, v := range f.vars {
			empty := v.IsNull() || (v.Type() == cty.String && v.AsString() == "")
			if credentialName.MatchString(name) && !empty {
				t.Errorf("%s: variable %q has a default: credentials come from Nomad variables", f.name, name)
			}
		}
		checkLiteralAttributes(t, f)

		job := f.job.Labels[0]
		for _, g := range blocks(f.job.Body, "group") {
			for _, task := range blocks(g.Body, "task") {
				for _, tp := range f.templates(t, task) {
					checkTemplateCredentials(t, f, job, tp)
				}
			}
		}
	}
}

// checkLiteralAttributes: no attribute anywhere in the file (an env block,
// a driver option) sets a credential-named key to a literal.
func checkLiteralAttributes(t *testing.T, f *jobFile) {
	t.Helper()
	_ = hclsyntax.VisitAll(f.job.Body, func(n hclsyntax.Node) hcl.Diagnostics {
		a, ok := n.(*hclsyntax.Attribute)
		if !ok || !credentialName.MatchString(a.Name) {
			return nil
		}
		if len(a.Expr.Variables()) == 0 {
			if v, diags := a.Expr.Value(nil); !diags.HasErrors() && v.Type() == cty.String && v.AsString() != "" {
				t.Errorf("%s:%d: %s is a literal credential", f.name, a.SrcRange.Start.Line, a.Name)
			}
		}
		return nil
	})
}

func checkTemplateCredentials(t *testing.T, f *jobFile, job string, tp tmpl) {
	t.Helper()
	where := f.name + ": template " + tp.destination
	for i, line := range strings.Split(tp.source, "\n") {
		m := assignment.FindStringSubmatch(line)
		if m == nil || !credentialName.MatchString(m[1]) {
			continue
		}
		val := strings.Trim(m[2], `"'`)
		if val != "" && !strings.HasPrefix(val, "{{") && !strings.HasPrefix(val, "/") {
			t.Errorf("%s, line %d: %s is set to a literal, not from a Nomad variable (or a file)", where, i+1, m[1])
		}
	}
	for _, m := range userinfo.FindAllStringSubmatch(tp.source, -1) {
		if rest := strings.Trim(templateAction.ReplaceAllString(m[1], ""), ":"); rest != "" {
			t.Errorf("%s: URL credentials %q are literal", where, m[1])
		}
	}
	paths := nomadVarPath.FindAllStringSubmatch(tp.source, -1)
	for _, m := range paths {
		// A task's workload identity may read nomad/jobs/<job> and below.
		if want := "nomad/jobs/" + job; m[1] != want && !strings.HasPrefix(m[1], want+"/") {
			t.Errorf("%s: nomadVar %q is outside %s, which the job's tasks may read", where, m[1], want)
		}
	}
	if len(paths) > 0 && !strings.HasPrefix(tp.destination, "secrets/") {
		t.Errorf("%s: renders a Nomad variable outside secrets/", where)
	}
	// Nomad renders a missing item as an empty string unless told
	// otherwise: an empty password or creds file must fail the render.
	if len(paths) > 0 && !f.boolean(t, tp.block.Body, "error_on_missing_key") {
		t.Errorf("%s: reads a Nomad variable without error_on_missing_key = true", where)
	}
}
