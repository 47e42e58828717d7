package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DepthSource reports queue depths and the DLQ size; the worker adapts
// JetStream to it.
type DepthSource interface {
	QueueDepths(ctx context.Context) (map[string]uint64, error)
	DLQSize(ctx context.Context) (uint64, error)
}

// DepthCollector reports sandrun_queue_depth and sandrun_dlq_messages at
// scrape time, caching the answer for a few seconds so that many scrapers
// never turn into many JetStream info requests.
type DepthCollector struct {
	src   DepthSource
	ttl   time.Duration
	depth *prometheus.Desc
	dlq   *prometheus.Desc

	mu     sync.Mutex
	at     time.Time
	depths map[string]uint64
	dlqN   uint64
	ok     bool
}

// NewDepthCollector returns a collector over src.
func NewDepthCollector(src DepthSource) *DepthCollector {
	return &DepthCollector{
		src:   src,
		ttl:   5 * time.Second,
		depth: prometheus.NewDesc("sandrun_queue_depth", "Jobs waiting in a queue (consumer pending).", []string{"queue"}, nil),
		dlq:   prometheus.NewDesc("sandrun_dlq_messages", "Entries in the dead-letter queue.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *DepthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depth
	ch <- c.dlq
}

// Collect implements prometheus.Collector.
func (c *DepthCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) > c.ttl {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		d, err1 := c.src.QueueDepths(ctx)
		n, err2 := c.src.DLQSize(ctx)
		cancel()
		c.ok = err1 == nil && err2 == nil
		if c.ok {
			c.depths, c.dlqN, c.at = d, n, time.Now()
		}
	}
	if !c.ok && c.depths == nil {
		return
	}
	for q, n := range c.depths {
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(n), q)
	}
	ch <- prometheus.MustNewConstMetric(c.dlq, prometheus.GaugeValue, float64(c.dlqN))
}

var _ prometheus.Collector = (*DepthCollector)(nil)
