package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cuzk/cuzk/gpu/devinfo"
)

// WatchGPUs adds per-GPU gauges from the latest telemetry samples (a devinfo.Poller).
// A reading the device does not support is left out rather than reported as 0.
func (m *Metrics) WatchGPUs(s devinfo.LatestSamples) error {
	return m.reg.Register(gpuCollector{s})
}

var gpuLabels = []string{"gpu", "uuid"}

var (
	gpuUtilDesc = prometheus.NewDesc("cuzk_gpu_utilization_ratio",
		"Fraction of the last sample period the GPU was busy (NVML).", gpuLabels, nil)
	gpuMemUtilDesc = prometheus.NewDesc("cuzk_gpu_memory_utilization_ratio",
		"Fraction of the last sample period the GPU's memory controller was busy.", gpuLabels, nil)
	gpuMemUsedDesc = prometheus.NewDesc("cuzk_gpu_memory_used_bytes",
		"GPU memory in use.", gpuLabels, nil)
	gpuMemTotalDesc = prometheus.NewDesc("cuzk_gpu_memory_total_bytes",
		"GPU memory size.", gpuLabels, nil)
	gpuTempDesc = prometheus.NewDesc("cuzk_gpu_temperature_celsius",
		"GPU core temperature.", gpuLabels, nil)
	gpuPowerDesc = prometheus.NewDesc("cuzk_gpu_power_watts",
		"GPU power draw.", gpuLabels, nil)
	gpuSampleAgeDesc = prometheus.NewDesc("cuzk_gpu_sample_timestamp_seconds",
		"Unix time of the GPU's latest telemetry sample (stale when polling fails).", gpuLabels, nil)
)

type gpuCollector struct{ s devinfo.LatestSamples }

func (c gpuCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{gpuUtilDesc, gpuMemUtilDesc, gpuMemUsedDesc, gpuMemTotalDesc, gpuTempDesc, gpuPowerDesc, gpuSampleAgeDesc} {
		ch <- d
	}
}

func (c gpuCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.s.LatestAll() {
		labels := []string{strconv.Itoa(s.Index), s.UUID}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		}
		if s.GPUUtilPct != nil {
			gauge(gpuUtilDesc, float64(*s.GPUUtilPct)/100)
		}
		if s.MemUtilPct != nil {
			gauge(gpuMemUtilDesc, float64(*s.MemUtilPct)/100)
		}
		gauge(gpuMemUsedDesc, float64(s.MemUsedBytes))
		gauge(gpuMemTotalDesc, float64(s.MemTotalBytes))
		if s.TemperatureC != nil {
			gauge(gpuTempDesc, float64(*s.TemperatureC))
		}
		if s.PowerMW != nil {
			gauge(gpuPowerDesc, float64(*s.PowerMW)/1000)
		}
		gauge(gpuSampleAgeDesc, float64(s.At.UnixNano())/1e9)
	}
}
