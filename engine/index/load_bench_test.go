package index

import (
	"context"
	"testing"

	"github.com/rcpgo/rcpgo/engine/search"
)

// BenchmarkLoadRecords measures the per-hit cost of reading stored
// records (the decoded-record cache off, so every Load decodes): each op
// Loads 10 documents, with or without their text, from records compressed
// one by one (format 2) or with the store's trained dictionary (format 3).
// It reports the stored bytes per record beside the time.
func BenchmarkLoadRecords(b *testing.B) {
	ctx := context.Background()
	docs := synthCorpus(15, 3000, benchVocab())
	for _, dict := range []bool{false, true} {
		ix, err := Open(ctx, b.TempDir(), Options{NoBackground: true, DocCacheBytes: -1, DictAfter: 1000})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ix.Add(ctx, docs); err != nil {
			b.Fatal(err)
		}
		if dict {
			if err := ix.CompactStore(ctx); err != nil {
				b.Fatal(err)
			}
		}
		var stored int
		ix.st.RewriteRecords(ctx, func(_ uint64, enc []byte) ([]byte, error) { stored += len(enc); return nil, nil })
		name := map[bool]string{false: "format2", true: "dict"}[dict]
		for _, withText := range []bool{true, false} {
			b.Run(name+map[bool]string{true: "/text", false: "/notext"}[withText], func(b *testing.B) {
				nums := make([]search.DocNum, 10)
				cpu0 := cpuTime()
				for i := 0; b.Loop(); i++ {
					for j := range nums {
						nums[j] = search.DocNum(1 + (i*10+j*257)%len(docs))
					}
					if _, _, err := ix.Load(ctx, nums, withText); err != nil {
						b.Fatal(err)
					}
				}
				reportCPU(b, cpu0, 0, "")
				b.ReportMetric(float64(stored)/float64(len(docs)), "stored-B/record")
			})
		}
		ix.Close()
	}
}
