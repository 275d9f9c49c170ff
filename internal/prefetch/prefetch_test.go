package prefetch

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"unsafe"
)

// Lines is a hint: it reads nothing back and changes nothing, whatever
// the count of lines and the alignment; a count of 0 or less asks for
// nothing (the loop counted down from 0 before: 2^64 prefetches, a hang).
func TestLinesChangesNothing(t *testing.T) {
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(i)
	}
	for _, tc := range []struct{ off, n int }{{0, 1}, {1, 1}, {63, 2}, {0, 64}, {4095, 1}, {0, 0}, {0, -1}} {
		Lines(unsafe.Pointer(&b[tc.off]), tc.n)
	}
	for i := range b {
		if b[i] != byte(i) {
			t.Fatalf("byte %d changed", i)
		}
	}
}

// BenchmarkDependentRead measures this machine's latency for one read that
// depends on the read before it, in arrays of 4 MB (within the last-level
// cache), 32 MB and 256 MB (beyond it; the codes of a 1 M-vector graph are
// 256 MB). An HNSW walk pays it once per expansion, for the links of the
// node it expands and again for its neighbours' codes (fetched together,
// see BenchmarkScatteredRead), so it sets how the dense leg of a hybrid
// request compares with the sparse one, which reads postings in order.
// docs/benchmarks.md gives the figures of the machines measured.
func BenchmarkDependentRead(b *testing.B) {
	for _, mb := range []int{4, 32, 256} {
		b.Run(strconv.Itoa(mb)+"MB", func(b *testing.B) {
			next := cycle(mb<<20/64, rand.New(rand.NewPCG(1, 2)))
			b.ResetTimer()
			p := int32(0)
			for range b.N {
				p = next[p*16] // one int32 per 64-byte line
			}
			sink = p
		})
	}
}

// BenchmarkScatteredRead reads what one HNSW expansion reads: 32 blocks of
// 256 bytes (int8 codes of 256 dimensions) at random in 256 MB, asking for
// all of them with Lines before reading them ("prefetched") or reading them
// in turn ("plain"). An op is one expansion's reads.
func BenchmarkScatteredRead(b *testing.B) {
	const block, blocks, fanout = 256, 1 << 20, 32
	mem := make([]byte, block*blocks)
	for i := range mem {
		mem[i] = byte(i)
	}
	r := rand.New(rand.NewPCG(3, 4))
	picks := make([]int, 1<<16)
	for i := range picks {
		picks[i] = r.IntN(blocks) * block
	}
	for _, tc := range []struct {
		name  string
		ahead bool
	}{{"prefetched", true}, {"plain", false}} {
		b.Run(tc.name, func(b *testing.B) {
			var sum byte
			for i := range b.N {
				set := picks[i*fanout%len(picks):][:fanout]
				if tc.ahead {
					for _, off := range set {
						Lines(unsafe.Pointer(&mem[off]), block/64)
					}
				}
				for _, off := range set {
					for l := 0; l < block; l += 64 {
						sum += mem[off+l]
					}
				}
			}
			sink = int32(sum)
		})
	}
}

var sink int32

// cycle returns n lines of 16 int32s whose first entries link every line
// into one random cycle: a line's first entry is the number of the next.
func cycle(n int, r *rand.Rand) []int32 {
	order := r.Perm(n)
	next := make([]int32, n*16)
	for i, line := range order {
		next[line*16] = int32(order[(i+1)%n])
	}
	return next
}
