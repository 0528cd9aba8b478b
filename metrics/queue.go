package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cuzk/cuzk/jobs"
	"github.com/cuzk/cuzk/store"
)

// QueueTimeout bounds the query a scrape runs, well inside Prometheus' default
// scrape timeout (10s), so a slow database cannot hold the other metrics up.
const QueueTimeout = 2 * time.Second

// WatchQueue adds gauges of River's jobs in cuzk's queue by state, counted in the
// database at scrape time, and cuzk_queue_up (0 when that count failed).
func (m *Metrics) WatchQueue(db store.DB) error {
	return m.reg.Register(queueCollector{db})
}

var (
	queueJobsDesc = prometheus.NewDesc("cuzk_queue_jobs",
		"River jobs in queue "+jobs.Queue+" by state, counted at scrape time (all workers).", []string{"state"}, nil)
	queueUpDesc = prometheus.NewDesc("cuzk_queue_up",
		"1 if the last scrape could count the queue in the database, else 0.", nil, nil)
)

type queueCollector struct{ db store.DB }

func (c queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueJobsDesc
	ch <- queueUpDesc
}

func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), QueueTimeout)
	defer cancel()
	counts, err := store.QueueJobs(ctx, c.db, jobs.Queue)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(queueUpDesc, prometheus.GaugeValue, 0)
		ch <- prometheus.NewInvalidMetric(queueJobsDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(queueUpDesc, prometheus.GaugeValue, 1)
	for _, c := range counts {
		ch <- prometheus.MustNewConstMetric(queueJobsDesc, prometheus.GaugeValue, float64(c.N), c.State)
	}
}
