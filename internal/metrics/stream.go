package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ConsumerState is a queue's consumer, as JetStream reports it.
type ConsumerState struct {
	Pending     uint64 // messages not yet delivered
	AckPending  uint64 // delivered, not yet acknowledged
	Redelivered uint64 // delivered more than once and not yet acknowledged
}

// StreamState is one stream's size.
type StreamState struct {
	Messages uint64
	Bytes    uint64
}

// JetStreamState is what the worker reads of JetStream for its metrics.
type JetStreamState struct {
	Consumers map[string]ConsumerState // by queue
	Streams   map[string]StreamState   // by stream name
	DLQ       uint64
}

// StateSource reads the JetStream state; the worker adapts JetStream to it.
type StateSource interface {
	JetStreamState(ctx context.Context) (JetStreamState, error)
}

// StateCollector reports the queues' consumers, the streams' sizes and
// the DLQ at scrape time from a snapshot cached for a few seconds, so that
// scrapes never turn into a JetStream info request each, and jobs never
// cause one.
type StateCollector struct {
	src                                       StateSource
	ttl                                       time.Duration
	depth, ackPending, redelivered, dlq       *prometheus.Desc
	streamBytes, streamMessages, scrapeErrors *prometheus.Desc

	mu     sync.Mutex
	at     time.Time
	state  JetStreamState
	ok     bool
	failed uint64
}

// NewStateCollector returns a collector over src.
func NewStateCollector(src StateSource) *StateCollector {
	return &StateCollector{
		src:            src,
		ttl:            5 * time.Second,
		depth:          prometheus.NewDesc("sandrun_queue_depth", "Jobs waiting in a queue (consumer pending).", []string{"queue"}, nil),
		ackPending:     prometheus.NewDesc("sandrun_queue_ack_pending", "Job messages delivered to a worker and not yet acknowledged.", []string{"queue"}, nil),
		redelivered:    prometheus.NewDesc("sandrun_queue_redelivered", "Job messages delivered more than once and not yet acknowledged.", []string{"queue"}, nil),
		dlq:            prometheus.NewDesc("sandrun_dlq_messages", "Entries in the dead-letter queue.", nil, nil),
		streamBytes:    prometheus.NewDesc("sandrun_stream_bytes", "Bytes stored in a JetStream stream of sandrun's layout.", []string{"stream"}, nil),
		streamMessages: prometheus.NewDesc("sandrun_stream_messages", "Messages stored in a JetStream stream of sandrun's layout.", []string{"stream"}, nil),
		scrapeErrors:   prometheus.NewDesc("sandrun_jetstream_state_errors_total", "Failed reads of the JetStream state for these metrics.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *StateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.depth, c.ackPending, c.redelivered, c.dlq, c.streamBytes, c.streamMessages, c.scrapeErrors} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *StateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) > c.ttl {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := c.src.JetStreamState(ctx)
		cancel()
		if err == nil {
			c.state, c.at, c.ok = st, time.Now(), true
		} else {
			c.failed++
		}
	}
	ch <- prometheus.MustNewConstMetric(c.scrapeErrors, prometheus.CounterValue, float64(c.failed))
	if !c.ok {
		return
	}
	for q, s := range c.state.Consumers {
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(s.Pending), q)
		ch <- prometheus.MustNewConstMetric(c.ackPending, prometheus.GaugeValue, float64(s.AckPending), q)
		ch <- prometheus.MustNewConstMetric(c.redelivered, prometheus.GaugeValue, float64(s.Redelivered), q)
	}
	for name, s := range c.state.Streams {
		ch <- prometheus.MustNewConstMetric(c.streamBytes, prometheus.GaugeValue, float64(s.Bytes), name)
		ch <- prometheus.MustNewConstMetric(c.streamMessages, prometheus.GaugeValue, float64(s.Messages), name)
	}
	ch <- prometheus.MustNewConstMetric(c.dlq, prometheus.GaugeValue, float64(c.state.DLQ))
}

var _ prometheus.Collector = (*StateCollector)(nil)

// ServerStats are an embedded NATS server's own figures.
type ServerStats struct {
	Connections              int
	InMsgs, OutMsgs          int64
	InBytes, OutBytes        int64
	JetStreamMemory          uint64
	JetStreamStore           uint64
	JetStreamStreams         int
	JetStreamConsumers       int
	JetStreamAPIRequests     uint64
	JetStreamAPIErrors       uint64
	SlowConsumers            int64
	JetStreamReservedStorage uint64
}

// ServerCollector reports an embedded NATS server's figures (sandrun dev,
// single-machine deployments), read at scrape time; the server's own
// in-process state makes this cheap.
type ServerCollector struct {
	stats func() (ServerStats, error)
	descs map[string]*prometheus.Desc
}

// NewServerCollector returns a collector over stats.
func NewServerCollector(stats func() (ServerStats, error)) *ServerCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &ServerCollector{stats: stats, descs: map[string]*prometheus.Desc{
		"conns":     d("sandrun_nats_connections", "Client connections to the embedded NATS server."),
		"in_msgs":   d("sandrun_nats_in_messages_total", "Messages received by the embedded NATS server."),
		"out_msgs":  d("sandrun_nats_out_messages_total", "Messages sent by the embedded NATS server."),
		"in_bytes":  d("sandrun_nats_in_bytes_total", "Bytes received by the embedded NATS server."),
		"out_bytes": d("sandrun_nats_out_bytes_total", "Bytes sent by the embedded NATS server."),
		"slow":      d("sandrun_nats_slow_consumers_total", "Slow consumers the embedded NATS server has seen."),
		"js_mem":    d("sandrun_nats_jetstream_memory_bytes", "JetStream memory storage used by the embedded server."),
		"js_store":  d("sandrun_nats_jetstream_store_bytes", "JetStream file storage used by the embedded server."),
		"js_res":    d("sandrun_nats_jetstream_reserved_store_bytes", "JetStream file storage reserved by the embedded server's streams."),
		"streams":   d("sandrun_nats_jetstream_streams", "Streams on the embedded server."),
		"consumers": d("sandrun_nats_jetstream_consumers", "Consumers on the embedded server."),
		"api":       d("sandrun_nats_jetstream_api_requests_total", "JetStream API requests the embedded server answered."),
		"api_err":   d("sandrun_nats_jetstream_api_errors_total", "JetStream API requests that failed."),
	}}
}

// Describe implements prometheus.Collector.
func (c *ServerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *ServerCollector) Collect(ch chan<- prometheus.Metric) {
	s, err := c.stats()
	if err != nil {
		return
	}
	g, k := prometheus.GaugeValue, prometheus.CounterValue
	for name, v := range map[string]struct {
		t prometheus.ValueType
		v float64
	}{
		"conns": {g, float64(s.Connections)}, "in_msgs": {k, float64(s.InMsgs)}, "out_msgs": {k, float64(s.OutMsgs)},
		"in_bytes": {k, float64(s.InBytes)}, "out_bytes": {k, float64(s.OutBytes)}, "slow": {k, float64(s.SlowConsumers)},
		"js_mem": {g, float64(s.JetStreamMemory)}, "js_store": {g, float64(s.JetStreamStore)},
		"js_res": {g, float64(s.JetStreamReservedStorage)}, "streams": {g, float64(s.JetStreamStreams)},
		"consumers": {g, float64(s.JetStreamConsumers)}, "api": {k, float64(s.JetStreamAPIRequests)},
		"api_err": {k, float64(s.JetStreamAPIErrors)},
	} {
		ch <- prometheus.MustNewConstMetric(c.descs[name], v.t, v.v)
	}
}

var _ prometheus.Collector = (*ServerCollector)(nil)
