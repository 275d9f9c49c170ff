package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rcpgo/rcpgo/rcp"
)

// metrics exports Prometheus metrics for rcpd:
//
//	rcpd_requests_total{method,code}           requests served by the engine (code "0" = success;
//	                                           method "other" for names the engine does not serve)
//	rcpd_request_duration_seconds{method}      their latency
//	rcpd_index_documents / _deleted / _segments / _segment_bytes
//	rcpd_index_version_info{version}            (value 1)
//	rcpd_dense_build_units_done / _total        the dense build in progress (both 0 when none)
//
// Lifecycle methods answered by the server itself (initialize, info, ping,
// shutdown) and requests rejected by gating never reach the engine and are
// not counted.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(eng engineState) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rcpd_requests_total",
		Help: "RCP requests served by the engine, by method and result code (0 = success)."}, []string{"method", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rcpd_request_duration_seconds",
		Help: "Latency of RCP requests served by the engine.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"method"})
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	m.reg.MustRegister(m.requests, m.latency,
		gauge("rcpd_index_documents", "Live indexed units (documents and chunks).", func() float64 { return float64(eng.Stats().Docs) }),
		gauge("rcpd_index_deleted", "Deleted units still occupying segments.", func() float64 { return float64(eng.Stats().Deleted) }),
		gauge("rcpd_index_segments", "Index segments.", func() float64 { return float64(eng.Stats().Segments) }),
		gauge("rcpd_index_segment_bytes", "Bytes of segment images.", func() float64 { return float64(eng.Stats().SegmentBytes) }),
		gauge("rcpd_dense_build_units_done", "Units embedded and inserted by the dense build in progress (0: none).", func() float64 {
			b, _ := eng.DenseBuild()
			return float64(b.Done)
		}),
		gauge("rcpd_dense_build_units_total", "Units the dense build in progress covers (0: none).", func() float64 {
			b, _ := eng.DenseBuild()
			return float64(b.Total)
		}),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// wrap returns a Handler that records every Call of h.
func (m *metrics) wrap(h rcp.Handler) rcp.Handler { return meteredHandler{h: h, m: m} }

type meteredHandler struct {
	h rcp.Handler
	m *metrics
}

func (mh meteredHandler) Describe(ctx context.Context) rcp.Description { return mh.h.Describe(ctx) }

// LiveMeta passes on the wrapped handler's (rcp.LiveMeta).
func (mh meteredHandler) LiveMeta(ctx context.Context) rcp.Meta {
	if lm, ok := mh.h.(rcp.LiveMeta); ok {
		return lm.LiveMeta(ctx)
	}
	return nil
}

func (mh meteredHandler) Call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	start := time.Now()
	res, err := mh.h.Call(ctx, method, params)
	code := "0"
	if err != nil {
		code = strconv.Itoa(int(rcp.CodeOf(err)))
	}
	label := "other" // attacker-chosen names must not become labels
	if h, ok := mh.h.(interface{ Handles(string) bool }); ok && h.Handles(method) {
		label = method
	}
	mh.m.requests.WithLabelValues(label, code).Inc()
	mh.m.latency.WithLabelValues(label).Observe(time.Since(start).Seconds())
	return res, err
}
