package lsa

import (
	"runtime"
	"sync"
)

// csr is a compressed-sparse-row matrix of float64.
type csr struct {
	rows, cols int
	indptr     []int
	indices    []int32
	data       []float64
}

// transpose returns the CSR form of the transpose (the CSC form of m).
func (m *csr) transpose() *csr {
	t := &csr{rows: m.cols, cols: m.rows, indptr: make([]int, m.cols+1),
		indices: make([]int32, len(m.indices)), data: make([]float64, len(m.data))}
	for _, j := range m.indices {
		t.indptr[j+1]++
	}
	for j := 0; j < m.cols; j++ {
		t.indptr[j+1] += t.indptr[j]
	}
	next := make([]int, m.cols)
	copy(next, t.indptr[:m.cols])
	for i := 0; i < m.rows; i++ {
		for p := m.indptr[i]; p < m.indptr[i+1]; p++ {
			j := m.indices[p]
			q := next[j]
			t.indices[q] = int32(i)
			t.data[q] = m.data[p]
			next[j]++
		}
	}
	return t
}

// mulDense computes out = m × d, where d is a row-major m.cols×l matrix and
// out a row-major m.rows×l matrix. Rows are split across workers in
// contiguous blocks balanced by non-zero count, so the result is
// deterministic.
func (m *csr) mulDense(d []float64, l int, out []float64, workers int) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	clear(out[:m.rows*l])
	nnz := len(m.data)
	if workers == 1 || nnz < 1<<14 {
		m.mulRows(d, l, out, 0, m.rows)
		return
	}
	var wg sync.WaitGroup
	start := 0
	for w := 0; w < workers; w++ {
		end := m.rows
		if w < workers-1 {
			target := nnz * (w + 1) / workers
			end = start
			for end < m.rows && m.indptr[end] < target {
				end++
			}
		}
		if end > start {
			wg.Add(1)
			go func(lo, hi int) {
				defer wg.Done()
				m.mulRows(d, l, out, lo, hi)
			}(start, end)
		}
		start = end
	}
	wg.Wait()
}

func (m *csr) mulRows(d []float64, l int, out []float64, lo, hi int) {
	for i := lo; i < hi; i++ {
		o := out[i*l : (i+1)*l]
		for p := m.indptr[i]; p < m.indptr[i+1]; p++ {
			a := m.data[p]
			row := d[int(m.indices[p])*l : int(m.indices[p])*l+l]
			for c, x := range row {
				o[c] += a * x
			}
		}
	}
}
