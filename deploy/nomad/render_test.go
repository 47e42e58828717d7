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

	"github.com/sandrun/sandrun/internal/auth"
	"github.com/sandrun/sandrun/internal/testenv"
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
	// The credentials as docs/deploy.md makes them: `sandrun auth init`,
	// `sandrun auth export` for the servers, one identity per daemon.
	m, err := auth.Ensure(filepath.Join(t.TempDir(), "auth"))
	if err != nil {
		t.Fatal(err)
	}
	natsVar := map[string]string{}
	for _, kv := range m.Exports() {
		natsVar[kv[0]] = kv[1]
	}
	workerCreds, err := m.Mint(auth.Identity{Name: "worker", Role: auth.RoleWorker})
	if err != nil {
		t.Fatal(err)
	}
	schedulerCreds, err := m.Mint(auth.Identity{Name: "scheduler", Role: auth.RoleScheduler})
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
	// The servers' TLS material: a CA and a certificate for their addresses.
	pki := testenv.NewPKI(t, hostIP, "10.0.0.1", "10.0.0.2", "10.0.0.3")
	ca := pki.CAPEM
	maps.Copy(natsVar, map[string]string{"tls_ca": ca, "tls_cert": pki.CertPEM, "tls_key": pki.KeyPEM,
		"route_user": "route", "route_password": "0123456789abcdef0123456789abcdef"})
	return fixture{
		vars: map[string]map[string]string{
			"nomad/jobs/nats":              natsVar,
			"nomad/jobs/sandrun-scheduler": {"creds": string(schedulerCreds), "nats_ca": ca},
			"nomad/jobs/sandrun-worker":    {"creds": string(workerCreds), "nats_ca": ca},
		},
		services: map[string][]nomadService{"nats": client, "nats-cluster": routes},
	}
}
