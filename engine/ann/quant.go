package ann

import (
	"math"
	"unsafe"

	"github.com/rcpgo/rcpgo/internal/prefetch"
)

// quantized is an int8 copy of the stored vectors that the graph walk
// scores instead of the float32 ones: a search is bound by fetching the
// vectors of the nodes it visits (thousands, scattered), and a code is a
// quarter of the bytes. Each dimension d has its own scale (code =
// round(x·scale[d]), clipped to ±127) taken from the largest |x| of that
// dimension when the copy is built; vectors added later are clipped to
// it. The walk's final candidates are re-scored with the float32
// vectors, so returned scores are exact and only the route — which
// nodes the walk reaches — follows the approximation.
//
// It is derived, never stored: Quantize builds it from the verified
// vectors of a loaded or built index.
type quantized struct {
	dim   int
	scale []float32 // per dimension
	codes []int8    // slot-major, dim per slot
}

// newQuantized encodes the vectors of slots [0, n).
func newQuantized(dim, n int, vec func(int32) []float32) *quantized {
	q := &quantized{dim: dim, scale: make([]float32, dim), codes: make([]int8, 0, n*dim)}
	for s := range n {
		for d, x := range vec(int32(s)) {
			q.scale[d] = max(q.scale[d], float32(math.Abs(float64(x))))
		}
	}
	for d, m := range q.scale {
		q.scale[d] = 1
		if m > 0 {
			q.scale[d] = 127 / m
		}
	}
	for s := range n {
		q.append(vec(int32(s)))
	}
	return q
}

// append encodes the vector of the next slot.
func (q *quantized) append(v []float32) {
	for d, x := range v {
		q.codes = append(q.codes, toInt8(x*q.scale[d]))
	}
}

// warm asks the cache for the codes of the slots not yet visited (of all
// of them when vis is nil: the greedy descent through the upper layers
// keeps no visited set), so that the walk's next scores find them there:
// fetched one after another, each would wait for memory in turn.
func (q *quantized) warm(slots []int32, vis *visited) {
	lines := (q.dim + 63) / 64
	for _, s := range slots {
		if vis == nil || !vis.seen(s) {
			prefetch.Lines(unsafe.Pointer(&q.codes[int(s)*q.dim]), lines)
		}
	}
}

func (q *quantized) code(s int32) []int8 {
	return q.codes[int(s)*q.dim : int(s)*q.dim+q.dim]
}

// query encodes v for dot8 against the codes: Σ v[d]·x[d] ≈
// Σ (v[d]/scale[d])·code[d], and those weights are quantized with one
// scale of their own — a positive factor per query, which leaves the
// order of the scores as it is.
func (q *quantized) query(v []float32) []int8 {
	var top float32
	for d, x := range v {
		top = max(top, float32(math.Abs(float64(x/q.scale[d]))))
	}
	out := make([]int8, len(v))
	if top == 0 {
		return out
	}
	for d, x := range v {
		out[d] = toInt8(x / q.scale[d] * 127 / top)
	}
	return out
}

// toInt8 rounds x to the nearest integer in [-127, 127].
func toInt8(x float32) int8 {
	switch {
	case x >= 127:
		return 127
	case x <= -127:
		return -127
	case x >= 0:
		return int8(x + 0.5)
	}
	return int8(x - 0.5)
}
