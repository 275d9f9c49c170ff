package retrieval

import "github.com/rcpgo/rcpgo/rcp"

// FusionDefaults are the server-side defaults of hybrid fusion, used for
// every option a request leaves unset (docs/rcpd.md lists the measured
// defaults and the quality table they come from).
type FusionDefaults struct {
	// Method is the fusion method when the request names none: convex
	// (default: both lists have floor 0), rrf or weighted.
	Method string
	// RRFK is the RRF constant (default 60).
	RRFK float64
	// Alpha is the convex weight of the dense list when the request sends
	// none (default DefaultAlpha, measured; §16.3's conventional 0.5 is
	// one "alpha": 0.5 away).
	Alpha float64
	// SparseWeight and DenseWeight weight the lists in rrf and weighted
	// fusion (default 1 each).
	SparseWeight, DenseWeight float64
}

// Fusion defaults. DefaultAlpha was measured (docs/rcpd.md, "Retrieval
// quality"): over α ∈ {0.2 … 0.7} it maximises the mean nDCG@10 of SciFact
// and Cranfield with the LSA encoder, and it is the only value that beats
// sparse on both; RRF (any rrfK, weights) loses to sparse on SciFact.
const (
	DefaultFusion = rcp.FusionConvex
	DefaultRRFK   = 60
	DefaultAlpha  = 0.2
)

// WithDefaults fills in what f leaves to the server.
func (f FusionDefaults) WithDefaults() FusionDefaults {
	if f.Method == "" {
		f.Method = DefaultFusion
	}
	if f.RRFK <= 0 {
		f.RRFK = DefaultRRFK
	}
	if f.Alpha <= 0 || f.Alpha > 1 {
		f.Alpha = DefaultAlpha
	}
	if f.SparseWeight <= 0 {
		f.SparseWeight = 1
	}
	if f.DenseWeight <= 0 {
		f.DenseWeight = 1
	}
	return f
}
