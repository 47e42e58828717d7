package metrics

import (
	"context"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// docMetric is one row of docs/metrics.md.
type docMetric struct {
	kind   string
	labels []string
}

var (
	rowRE    = regexp.MustCompile("^\\| `(sandrun_[a-z_]+)` \\| ([a-z]+) \\|([^|]*)\\|")
	parensRE = regexp.MustCompile(`\([^)]*\)`)
	descRE   = regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
)

// readCatalogue parses the metrics table of docs/metrics.md.
func readCatalogue(t *testing.T) map[string]docMetric {
	t.Helper()
	data, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]docMetric{}
	for _, line := range strings.Split(string(data), "\n") {
		m := rowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var labels []string
		for _, l := range strings.Split(parensRE.ReplaceAllString(m[3], ""), ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		if _, dup := out[m[1]]; dup {
			t.Errorf("docs/metrics.md lists %s twice", m[1])
		}
		out[m[1]] = docMetric{kind: m[2], labels: labels}
	}
	return out
}

type noState struct{}

func (noState) JetStreamState(context.Context) (JetStreamState, error) {
	return JetStreamState{Consumers: map[string]ConsumerState{"default": {}}, Streams: map[string]StreamState{"JOBS": {}}}, nil
}

// kindOf names a collector's metric type as the catalogue does.
func kindOf(c prometheus.Collector) string {
	switch c.(type) { // Gauge first: a gauge is also a Counter
	case prometheus.Gauge, *prometheus.GaugeVec:
		return "gauge"
	case prometheus.Counter, *prometheus.CounterVec:
		return "counter"
	case prometheus.Histogram, *prometheus.HistogramVec:
		return "histogram"
	}
	return "" // collectors computed at scrape: the type is in the value
}

// TestCatalogueMatchesRegistry: every sandrun metric the code registers is
// in docs/metrics.md with its type and labels, and the document names no
// metric the code does not export.
func TestCatalogueMatchesRegistry(t *testing.T) {
	doc := readCatalogue(t)
	m := New()
	collectors := []prometheus.Collector{NewStateCollector(noState{}), NewServerCollector(func() (ServerStats, error) { return ServerStats{}, nil })}
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		if c, ok := v.Field(i).Interface().(prometheus.Collector); ok && v.Type().Field(i).Name != "Registry" {
			collectors = append(collectors, c)
		}
	}
	// The types of metrics computed at scrape come from a scrape.
	scraped := map[string]string{}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collectors[0], collectors[1])
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		scraped[f.GetName()] = strings.ToLower(f.GetType().String())
	}
	seen := map[string]bool{}
	for _, c := range collectors {
		ch := make(chan *prometheus.Desc, 8)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			md := descRE.FindStringSubmatch(d.String())
			if md == nil {
				t.Fatalf("cannot read %s", d)
			}
			name := md[1]
			var labels []string
			for _, l := range strings.Split(md[2], ",") {
				if l = strings.TrimSpace(l); l != "" {
					labels = append(labels, l)
				}
			}
			slices.Sort(labels)
			seen[name] = true
			want, ok := doc[name]
			switch {
			case !ok:
				t.Errorf("%s is exported but not in docs/metrics.md", name)
			case want.kind != kindOf(c) && want.kind != scraped[name]:
				t.Errorf("%s: docs/metrics.md says %s, the code has a %s%s", name, want.kind, kindOf(c), scraped[name])
			case !slices.Equal(want.labels, labels):
				t.Errorf("%s: docs/metrics.md labels %v, the code's %v", name, want.labels, labels)
			}
		}
	}
	for name := range doc {
		if !seen[name] {
			t.Errorf("docs/metrics.md lists %s, which the code does not export", name)
		}
	}
}
