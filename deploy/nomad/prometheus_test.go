package nomad_test

import (
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type promConfig struct {
	RuleFiles     []string       `yaml:"rule_files"`
	ScrapeConfigs []scrapeConfig `yaml:"scrape_configs"`
}

type scrapeConfig struct {
	JobName string `yaml:"job_name"`
	NomadSD []struct {
		Server        string `yaml:"server"`
		Authorization struct {
			CredentialsFile string `yaml:"credentials_file"`
		} `yaml:"authorization"`
	} `yaml:"nomad_sd_configs"`
	Relabel []relabel `yaml:"relabel_configs"`
}

type relabel struct {
	SourceLabels []string `yaml:"source_labels"`
	Separator    string   `yaml:"separator"`
	Regex        string   `yaml:"regex"`
	Action       string   `yaml:"action"`
}

// keeps applies the keep/drop relabelings to a target's labels as
// Prometheus would (anchored regex, default separator ";", default regex
// "(.*)").
func keeps(t *testing.T, rules []relabel, labels map[string]string) bool {
	t.Helper()
	for _, r := range rules {
		if r.Action != "keep" && r.Action != "drop" {
			continue
		}
		sep := r.Separator
		if sep == "" {
			sep = ";"
		}
		var vals []string
		for _, l := range r.SourceLabels {
			vals = append(vals, labels[l])
		}
		re := r.Regex
		if re == "" {
			re = "(.*)"
		}
		match := regexp.MustCompile("^(?:" + re + ")$").MatchString(strings.Join(vals, sep))
		if match != (r.Action == "keep") {
			return false
		}
	}
	return true
}

func TestPrometheusScrapesTaggedServices(t *testing.T) {
	t.Parallel()
	files := loadJobFiles(t)
	f := files[prometheusFile]
	g := blocks(f.job.Body, "group")[0]
	task := blocks(g.Body, "task")[0]
	ts := f.templates(t, task)
	conf, ok := findTemplate(ts, "prometheus.yml")
	if !ok {
		t.Fatal("no template rendering prometheus.yml")
	}
	data, err := os.ReadFile(renderFile(t, conf, taskFixture(t, f, g, fixture{})))
	if err != nil {
		t.Fatal(err)
	}
	var pc promConfig
	if err := yaml.Unmarshal(data, &pc); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	i := slices.IndexFunc(pc.ScrapeConfigs, func(sc scrapeConfig) bool { return len(sc.NomadSD) > 0 })
	if i < 0 {
		t.Fatal("no scrape config with nomad_sd_configs")
	}
	sc := pc.ScrapeConfigs[i]

	// The workload identity file authenticates service discovery.
	if cf := sc.NomadSD[0].Authorization.CredentialsFile; cf != "/secrets/nomad_token" {
		t.Errorf("nomad_sd credentials_file %q, want the workload identity /secrets/nomad_token", cf)
	} else if id := blocks(task.Body, "identity"); len(id) == 0 || !f.boolean(t, id[0].Body, "file") {
		t.Error("no identity { file = true }: secrets/nomad_token is never written")
	}

	// Services tagged prometheus are scraped; the NATS JSON endpoints and
	// routes are not (the exporter serves their metrics).
	want := map[string]bool{
		"sandrun-worker": true, "sandrun-scheduler": true, "nats-exporter": true, "prometheus": true,
		"nats": false, "nats-cluster": false, "nats-monitor": false,
	}
	for _, jf := range files {
		for _, jg := range blocks(jf.job.Body, "group") {
			for _, s := range jf.services(t, jg) {
				labels := map[string]string{"__meta_nomad_service": s.name}
				if len(s.tags) > 0 {
					labels["__meta_nomad_tags"] = "," + strings.Join(s.tags, ",") + ","
				}
				kept := keeps(t, sc.Relabel, labels)
				if w, ok := want[s.name]; ok && w != kept {
					t.Errorf("service %q: scraped %v, want %v", s.name, kept, w)
				}
				delete(want, s.name)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("services not found in any job file: %v", want)
	}

	// The alert rules template lands where rule_files looks, and leaves
	// Prometheus' own {{ }} templates alone.
	rules, ok := findTemplate(ts, "rules.yml")
	if !ok {
		t.Fatal("no template for the alert rules")
	}
	if !slices.ContainsFunc(pc.RuleFiles, func(glob string) bool {
		m, _ := path.Match(glob, "/"+rules.destination)
		return m
	}) {
		t.Errorf("rule_files %q do not cover %s", pc.RuleFiles, rules.destination)
	}
	if rules.leftDelim == "" || rules.leftDelim == "{{" {
		t.Error("the rules template renders with {{ }}: Prometheus' $labels templates would be eaten")
	}
	if _, err := render(rules, fixture{}); err != nil {
		t.Errorf("rules template: %v", err)
	}
}
