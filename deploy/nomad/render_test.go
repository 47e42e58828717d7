package nomad_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// A stand-in for what Nomad gives a task's templates. Nomad renders
// templates with consul-template, which is Go's text/template plus
// functions; the three used here are emulated: env (the task's
// environment, node attributes included), nomadVar (a Nomad variable's
// items) and nomadService (the registrations of a Nomad service). Any other
// function fails to parse. An unknown env name or variable path is an
// error, so a typo fails the test (Nomad would render an empty string or
// wait); a missing item is an error too, as error_on_missing_key makes it
// in Nomad.

// nomadService mirrors the fields of consul-template's NomadService used
// by the job files.
type nomadService struct {
	Name    string
	Address string
	Port    int
	Tags    []string
}

type fixture struct {
	env      map[string]string
	vars     map[string]map[string]string
	services map[string][]nomadService
}

const hostIP = "10.0.0.7"

// taskFixture is what a task of group sees: its ports' NOMAD_* variables,
// node attributes, and the cluster's variables and services.
func taskFixture(t *testing.T, f *jobFile, group *hclsyntax.Block, cluster fixture) fixture {
	t.Helper()
	env := map[string]string{
		"NOMAD_NAMESPACE":                "default",
		"NOMAD_SECRETS_DIR":              "/secrets",
		"NOMAD_TASK_DIR":                 "/local",
		"NOMAD_ALLOC_DIR":                "/alloc",
		"NOMAD_SHORT_ALLOC_ID":           "1a2b3c4d",
		"NOMAD_ALLOC_INDEX":              "0",
		"node.unique.name":               "client-7",
		"attr.unique.network.ip-address": hostIP,
	}
	ports := f.ports(t, group)
	labels := slices.Sorted(maps.Keys(ports))
	for i, l := range labels {
		p := ports[l]
		host := p.static
		if host == 0 {
			host = 20000 + i // dynamic
		}
		env["NOMAD_IP_"+l] = hostIP
		env["NOMAD_HOST_PORT_"+l] = fmt.Sprint(host)
		env["NOMAD_PORT_"+l] = fmt.Sprint(max(p.inner(), host))
		env["NOMAD_ADDR_"+l] = fmt.Sprintf("%s:%d", hostIP, host)
	}
	return fixture{env: env, vars: cluster.vars, services: cluster.services}
}

// render executes a template's data as Nomad would with the fixture.
func render(tp tmpl, fx fixture) (string, error) {
	funcs := template.FuncMap{
		"env": func(name string) (string, error) {
			v, ok := fx.env[name]
			if !ok {
				return "", fmt.Errorf("env %q: not in the fixture", name)
			}
			return v, nil
		},
		"nomadVar": func(path string) (map[string]string, error) {
			v, ok := fx.vars[path]
			if !ok {
				return nil, fmt.Errorf("nomadVar %q: no such variable", path)
			}
			return v, nil
		},
		"nomadService": func(name string) []nomadService {
			return fx.services[name]
		},
	}
	tpl := template.New(tp.destination).Funcs(funcs).Option("missingkey=error")
	if tp.leftDelim != "" {
		tpl = tpl.Delims(tp.leftDelim, tp.rightDelim)
	}
	tpl, err := tpl.Parse(tp.data)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	if err := tpl.Execute(&out, nil); err != nil {
		return "", err
	}
	return out.String(), nil
}

// renderFile renders tp into a temporary file and returns its path.
func renderFile(t *testing.T, tp tmpl, fx fixture) string {
	t.Helper()
	out, err := render(tp, fx)
	if err != nil {
		t.Fatalf("render %s: %v", tp.destination, err)
	}
	path := filepath.Join(t.TempDir(), filepath.Base(tp.destination))
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// clusterFixture holds the Nomad variables docs/deploy.md tells operators
// to create (with freshly made, throwaway NATS keys) and the registrations
// of the nats job's services on three hosts.
func clusterFixture(t *testing.T, nats *jobFile) fixture {
	t.Helper()
	operator := mustKey(t, nkeys.CreateOperator)
	operatorPub := mustPublic(t, operator)
	_, sys, sysJWT := account(t, operator, "SYS", false)
	appKey, app, appJWT := account(t, operator, "SANDRUN", true)

	user := mustKey(t, nkeys.CreateUser)
	uc := jwt.NewUserClaims(mustPublic(t, user))
	userJWT, err := uc.Encode(appKey)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := user.Seed()
	if err != nil {
		t.Fatal(err)
	}
	creds, err := jwt.FormatUserConfig(userJWT, seed)
	if err != nil {
		t.Fatal(err)
	}
	oc := jwt.NewOperatorClaims(operatorPub)
	oc.Name = "sandrun"
	operatorJWT, err := oc.Encode(operator)
	if err != nil {
		t.Fatal(err)
	}

	group := blocks(nats.job.Body, "group")[0]
	ports := nats.ports(t, group)
	var client, routes []nomadService
	for i := range 3 {
		addr := fmt.Sprintf("10.0.0.%d", i+1)
		client = append(client, nomadService{Name: "nats", Address: addr, Port: ports["client"].static})
		routes = append(routes, nomadService{Name: "nats-cluster", Address: addr, Port: ports["cluster"].static})
	}
	return fixture{
		vars: map[string]map[string]string{
			"nomad/jobs/nats": {
				"operator_jwt":        operatorJWT,
				"system_account":      sys,
				"system_account_jwt":  sysJWT,
				"sandrun_account":     app,
				"sandrun_account_jwt": appJWT,
				"route_user":          "route",
				"route_password":      "0123456789abcdef0123456789abcdef",
			},
			"nomad/jobs/sandrun-scheduler": {"creds": string(creds)},
			"nomad/jobs/sandrun-worker":    {"creds": string(creds)},
		},
		services: map[string][]nomadService{"nats": client, "nats-cluster": routes},
	}
}

// account makes an account JWT signed by the operator; jetstream enables
// JetStream with no limits.
func account(t *testing.T, operator nkeys.KeyPair, name string, jetstream bool) (kp nkeys.KeyPair, pub, token string) {
	t.Helper()
	kp = mustKey(t, nkeys.CreateAccount)
	pub = mustPublic(t, kp)
	ac := jwt.NewAccountClaims(pub)
	ac.Name = name
	if jetstream {
		ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	}
	token, err := ac.Encode(operator)
	if err != nil {
		t.Fatal(err)
	}
	return kp, pub, token
}

func mustKey(t *testing.T, create func() (nkeys.KeyPair, error)) nkeys.KeyPair {
	t.Helper()
	kp, err := create()
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func mustPublic(t *testing.T, kp nkeys.KeyPair) string {
	t.Helper()
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return pub
}
