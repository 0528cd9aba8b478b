package metrics

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/store"
)

// QueueTimeout bounds the query a scrape runs, well inside Prometheus' default
// scrape timeout (10s), so a slow database cannot hold the other metrics up.
const QueueTimeout = 2 * time.Second

// WatchQueue adds gauges of River's jobs in cuzk's queues (jobs.Queues) by queue and
// state, counted in the database at scrape time, and cuzk_queue_up (0 when that count
// failed).
func (m *Metrics) WatchQueue(db store.DB) error {
	return m.reg.Register(queueCollector{db})
}

var (
	queueJobsDesc = prometheus.NewDesc("cuzk_queue_jobs",
		"River jobs of proof requests by queue ("+strings.Join(jobs.Queues(), ", ")+") and state, counted at scrape time (all workers).",
		[]string{"queue", "state"}, nil)
	queueUpDesc = prometheus.NewDesc("cuzk_queue_up",
		"1 if the last scrape could count the queues in the database, else 0.", nil, nil)
)

type queueCollector struct{ db store.DB }

func (c queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueJobsDesc
	ch <- queueUpDesc
}

func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), QueueTimeout)
	defer cancel()
	var ms []prometheus.Metric
	for _, q := range jobs.Queues() {
		counts, err := store.QueueJobs(ctx, c.db, q)
		if err != nil {
			ch <- prometheus.MustNewConstMetric(queueUpDesc, prometheus.GaugeValue, 0)
			ch <- prometheus.NewInvalidMetric(queueJobsDesc, err)
			return
		}
		for _, n := range counts {
			ms = append(ms, prometheus.MustNewConstMetric(queueJobsDesc, prometheus.GaugeValue, float64(n.N), q, n.State))
		}
	}
	ch <- prometheus.MustNewConstMetric(queueUpDesc, prometheus.GaugeValue, 1)
	for _, m := range ms {
		ch <- m
	}
}
