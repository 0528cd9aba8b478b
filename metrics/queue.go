package metrics

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cuzk/cuzk/jobs"
)

// Querier is the one pool method the queue gauges need (*pgxpool.Pool has it).
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// QueueTimeout bounds the query a scrape runs, well inside Prometheus' default
// scrape timeout (10s), so a slow database cannot hold the other metrics up.
const QueueTimeout = 2 * time.Second

// WatchQueue adds gauges of River's jobs in cuzk's queue by state, counted in the
// database at scrape time, and cuzk_queue_up (0 when that count failed).
func (m *Metrics) WatchQueue(db Querier) error {
	return m.reg.Register(queueCollector{db})
}

var (
	queueJobsDesc = prometheus.NewDesc("cuzk_queue_jobs",
		"River jobs in queue "+jobs.Queue+" by state, counted at scrape time (all workers).", []string{"state"}, nil)
	queueUpDesc = prometheus.NewDesc("cuzk_queue_up",
		"1 if the last scrape could count the queue in the database, else 0.", nil, nil)
)

// queueStates are River's states of jobs that are not finished.
var queueStates = []string{"available", "running", "scheduled", "retryable", "pending"}

type queueCollector struct{ db Querier }

func (c queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueJobsDesc
	ch <- queueUpDesc
}

func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), QueueTimeout)
	defer cancel()
	counts := make([]int64, len(queueStates))
	dest := make([]any, len(counts))
	for i := range counts {
		dest[i] = &counts[i]
	}
	// One row; the partial sums keep it to one index scan of river_job's (state, queue, ...) index.
	err := c.db.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE state = 'available'),
		       count(*) FILTER (WHERE state = 'running'),
		       count(*) FILTER (WHERE state = 'scheduled'),
		       count(*) FILTER (WHERE state = 'retryable'),
		       count(*) FILTER (WHERE state = 'pending')
		  FROM river_job
		 WHERE queue = $1 AND state IN ('available', 'running', 'scheduled', 'retryable', 'pending')`,
		jobs.Queue).Scan(dest...)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(queueUpDesc, prometheus.GaugeValue, 0)
		ch <- prometheus.NewInvalidMetric(queueJobsDesc, fmt.Errorf("count River jobs in queue %s: %w", jobs.Queue, err))
		return
	}
	ch <- prometheus.MustNewConstMetric(queueUpDesc, prometheus.GaugeValue, 1)
	for i, s := range queueStates {
		ch <- prometheus.MustNewConstMetric(queueJobsDesc, prometheus.GaugeValue, float64(counts[i]), s)
	}
}
