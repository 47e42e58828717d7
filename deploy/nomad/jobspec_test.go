package nomad_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// jobFile is one parsed *.nomad.hcl file. Nothing is evaluated the way
// Nomad would: literals are read with Value(nil), references to var.*
// resolve to the variable's default, and template data (which may only use
// var.* and jsonencode) is evaluated the same way. Nomad's runtime values
// (${NOMAD_*}, ${node.*}) are never evaluated; checks read their source.
type jobFile struct {
	name string // base name, e.g. nats.nomad.hcl
	src  []byte
	body *hclsyntax.Body
	job  *hclsyntax.Block
	vars map[string]cty.Value // variable defaults
	ctx  *hcl.EvalContext
}

// loadJobFiles parses every *.nomad.hcl in this directory.
func loadJobFiles(t *testing.T) map[string]*jobFile {
	t.Helper()
	paths, err := filepath.Glob("*.nomad.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no *.nomad.hcl files")
	}
	files := make(map[string]*jobFile, len(paths))
	for _, p := range paths {
		files[p] = parseJobFile(t, p)
	}
	return files
}

func parseJobFile(t *testing.T, path string) *jobFile {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", path, diags.Error())
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		t.Fatalf("%s: not native HCL syntax", path)
	}
	jf := &jobFile{name: path, src: src, body: body, vars: map[string]cty.Value{}}
	for _, v := range blocks(body, "variable") {
		name := v.Labels[0]
		if a := v.Body.Attributes["default"]; a != nil {
			val, diags := a.Expr.Value(nil)
			if diags.HasErrors() {
				t.Fatalf("%s: variable %q: default is not a literal: %s", path, name, diags.Error())
			}
			jf.vars[name] = val
		} else {
			jf.vars[name] = cty.NullVal(cty.DynamicPseudoType)
		}
	}
	jf.ctx = &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": cty.ObjectVal(jf.vars)},
		Functions: map[string]function.Function{"jsonencode": stdlib.JSONEncodeFunc},
	}
	jobs := blocks(body, "job")
	if len(jobs) != 1 {
		t.Fatalf("%s: %d job blocks, want exactly 1", path, len(jobs))
	}
	jf.job = jobs[0]
	return jf
}

// blocks returns the blocks of type typ directly in body.
func blocks(body *hclsyntax.Body, typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, b := range body.Blocks {
		if b.Type == typ {
			out = append(out, b)
		}
	}
	return out
}

// labelled returns the block of type typ labelled label, or nil.
func labelled(body *hclsyntax.Body, typ, label string) *hclsyntax.Block {
	for _, b := range blocks(body, typ) {
		if len(b.Labels) > 0 && b.Labels[0] == label {
			return b
		}
	}
	return nil
}

// source is the text of a node as written in the file.
func (f *jobFile) source(r hcl.Range) string {
	return string(r.SliceBytes(f.src))
}

// eval evaluates an expression that is a literal or uses only var.* and
// jsonencode. Anything else (a Nomad runtime reference) fails the test.
func (f *jobFile) eval(t *testing.T, expr hclsyntax.Expression) cty.Value {
	t.Helper()
	for _, tr := range expr.Variables() {
		if tr.RootName() != "var" {
			t.Fatalf("%s:%d: %s: only literals and var.* are evaluated here",
				f.name, expr.Range().Start.Line, f.source(expr.Range()))
		}
	}
	// Literals are evaluated without a context; var.* and jsonencode need one.
	var ctx *hcl.EvalContext
	if len(expr.Variables()) > 0 || callsFunction(expr) {
		ctx = f.ctx
	}
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", f.name, diags.Error())
	}
	return v
}

func callsFunction(expr hclsyntax.Expression) bool {
	found := false
	_ = hclsyntax.VisitAll(expr, func(n hclsyntax.Node) hcl.Diagnostics {
		if _, ok := n.(*hclsyntax.FunctionCallExpr); ok {
			found = true
		}
		return nil
	})
	return found
}

// attr returns body's attribute name, or nil.
func attr(body *hclsyntax.Body, name string) *hclsyntax.Attribute {
	return body.Attributes[name]
}

func (f *jobFile) str(t *testing.T, body *hclsyntax.Body, name string) string {
	t.Helper()
	a := attr(body, name)
	if a == nil {
		return ""
	}
	v := f.eval(t, a.Expr)
	if v.IsNull() || v.Type() != cty.String {
		t.Fatalf("%s:%d: %s is not a string", f.name, a.SrcRange.Start.Line, name)
	}
	return v.AsString()
}

// num returns the number attribute name, or def when it is absent.
func (f *jobFile) num(t *testing.T, body *hclsyntax.Body, name string, def int) int {
	t.Helper()
	a := attr(body, name)
	if a == nil {
		return def
	}
	v := f.eval(t, a.Expr)
	if v.IsNull() || v.Type() != cty.Number {
		t.Fatalf("%s:%d: %s is not a number", f.name, a.SrcRange.Start.Line, name)
	}
	n, _ := v.AsBigFloat().Int64()
	return int(n)
}

func (f *jobFile) boolean(t *testing.T, body *hclsyntax.Body, name string) bool {
	t.Helper()
	a := attr(body, name)
	if a == nil {
		return false
	}
	v := f.eval(t, a.Expr)
	return !v.IsNull() && v.Type() == cty.Bool && v.True()
}

func (f *jobFile) strings(t *testing.T, body *hclsyntax.Body, name string) []string {
	t.Helper()
	a := attr(body, name)
	if a == nil {
		return nil
	}
	v := f.eval(t, a.Expr)
	if ty := v.Type(); v.IsNull() || (!ty.IsListType() && !ty.IsTupleType() && !ty.IsSetType()) {
		t.Fatalf("%s:%d: %s is not a list", f.name, a.SrcRange.Start.Line, name)
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.Type() != cty.String {
			t.Fatalf("%s:%d: %s: element is not a string", f.name, a.SrcRange.Start.Line, name)
		}
		out = append(out, e.AsString())
	}
	return out
}

func (f *jobFile) duration(t *testing.T, body *hclsyntax.Body, name string) time.Duration {
	t.Helper()
	s := f.str(t, body, name)
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s: %s: %v", f.name, name, err)
	}
	return d
}

// port is one port of a group's network block.
type port struct {
	label  string
	static int // 0: dynamic
	to     int // 0: same as the host port
}

// inner is the port the task listens on.
func (p port) inner() int {
	if p.to != 0 {
		return p.to
	}
	return p.static
}

func (f *jobFile) ports(t *testing.T, group *hclsyntax.Block) map[string]port {
	t.Helper()
	out := map[string]port{}
	for _, n := range blocks(group.Body, "network") {
		for _, p := range blocks(n.Body, "port") {
			l := p.Labels[0]
			out[l] = port{label: l, static: f.num(t, p.Body, "static", 0), to: f.num(t, p.Body, "to", 0)}
		}
	}
	return out
}

// service is a service block of a group or of one of its tasks.
type service struct {
	name, provider, port string
	tags                 []string
	checks               []*hclsyntax.Block
}

func (f *jobFile) services(t *testing.T, group *hclsyntax.Block) []service {
	t.Helper()
	bodies := []*hclsyntax.Body{group.Body}
	for _, task := range blocks(group.Body, "task") {
		bodies = append(bodies, task.Body)
	}
	var out []service
	for _, b := range bodies {
		for _, s := range blocks(b, "service") {
			out = append(out, service{
				name:     f.str(t, s.Body, "name"),
				provider: f.str(t, s.Body, "provider"),
				port:     f.str(t, s.Body, "port"),
				tags:     f.strings(t, s.Body, "tags"),
				checks:   blocks(s.Body, "check"),
			})
		}
	}
	return out
}

func findService(svcs []service, name string) (service, bool) {
	i := slices.IndexFunc(svcs, func(s service) bool { return s.name == name })
	if i < 0 {
		return service{}, false
	}
	return svcs[i], true
}

// distinctHosts reports a constraint { distinct_hosts = true } on the group
// or the job.
func (f *jobFile) distinctHosts(t *testing.T, group *hclsyntax.Block) bool {
	t.Helper()
	for _, body := range []*hclsyntax.Body{group.Body, f.job.Body} {
		for _, c := range blocks(body, "constraint") {
			if f.boolean(t, c.Body, "distinct_hosts") {
				return true
			}
		}
	}
	return false
}

// nodeClass returns the value of the group's constraint on ${node.class}.
func (f *jobFile) nodeClass(t *testing.T, group *hclsyntax.Block) string {
	t.Helper()
	for _, c := range blocks(group.Body, "constraint") {
		a := attr(c.Body, "attribute")
		if a == nil || strings.Trim(f.source(a.Expr.Range()), `"`) != "${node.class}" {
			continue
		}
		if op := f.str(t, c.Body, "operator"); op != "" && op != "=" && op != "==" {
			t.Fatalf("%s: node class constraint with operator %q", f.name, op)
		}
		return f.str(t, c.Body, "value")
	}
	return ""
}

// tmpl is a template block: its destination, the source text of its data
// and the data evaluated (var.* substituted, as Nomad's job parser does).
type tmpl struct {
	block       *hclsyntax.Block
	destination string
	source      string
	data        string
	leftDelim   string
	rightDelim  string
}

func (f *jobFile) templates(t *testing.T, task *hclsyntax.Block) []tmpl {
	t.Helper()
	var out []tmpl
	for _, b := range blocks(task.Body, "template") {
		tp := tmpl{
			block:       b,
			destination: f.str(t, b.Body, "destination"),
			leftDelim:   f.str(t, b.Body, "left_delimiter"),
			rightDelim:  f.str(t, b.Body, "right_delimiter"),
		}
		a := attr(b.Body, "data")
		if a == nil {
			t.Fatalf("%s: template %s has no data", f.name, tp.destination)
		}
		tp.source = f.source(a.Expr.Range())
		tp.data = f.eval(t, a.Expr).AsString()
		out = append(out, tp)
	}
	return out
}

func findTemplate(ts []tmpl, suffix string) (tmpl, bool) {
	i := slices.IndexFunc(ts, func(tp tmpl) bool { return strings.HasSuffix(tp.destination, suffix) })
	if i < 0 {
		return tmpl{}, false
	}
	return ts[i], true
}
