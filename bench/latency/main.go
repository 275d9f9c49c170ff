// Command latency measures the query path against the search core on the
// same queries (issue 15, acceptance 4): the server-side latency an rcpd
// reports (usage.latencyMs) for top-k retrieves over HTTP, or the
// in-process engine/index search time on rcpd's index directory (stop
// rcpd first: the directory is locked while it runs).
//
//	latency -url http://127.0.0.1:7700/rcp -queries DIR/queries.jsonl -mode sparse
//	latency -index DATA/index -queries DIR/queries.jsonl [-phrase [-slop N]]
//
// It prints p50, p90 and p99 (milliseconds, nearest rank) and how many
// queries found a hit, as JSON.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/engine/index"
	"github.com/rcpgo/rcpgo/engine/search"
	"github.com/rcpgo/rcpgo/rcp"
)

func main() {
	url := flag.String("url", "", "rcpd HTTP endpoint (…/rcp)")
	dir := flag.String("index", "", "engine/index directory to search in process")
	queries := flag.String("queries", "", "BEIR queries.jsonl")
	mode := flag.String("mode", "sparse", "retrieve mode (HTTP)")
	k := flag.Int("k", 10, "hits per query")
	rounds := flag.Int("rounds", 2, "passes over the queries (the first warms up and is not counted)")
	phrase := flag.Bool("phrase", false, "quote the first two words of every query (a phrase query)")
	slop := flag.Int("slop", 0, "with -phrase, make the phrase a proximity query: \"w1 w2\"~slop")
	flag.Parse()
	qs, err := readQueries(*queries, *phrase, *slop)
	if err == nil && (*url == "") == (*dir == "") {
		err = fmt.Errorf("give -url or -index")
	}
	var lat []float64
	withHits := 0 // queries of the last round with at least one hit
	if err == nil {
		if *url != "" {
			lat, withHits, err = overHTTP(*url, *mode, *k, *rounds, qs)
		} else {
			lat, withHits, err = inProcess(*dir, *k, *rounds, qs)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "latency:", err)
		os.Exit(1)
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	out, _ := json.Marshal(map[string]any{"queries": len(lat), "p50ms": q(0.5), "p90ms": q(0.9), "p99ms": q(0.99), "mode": *mode, "k": *k, "withHits": withHits})
	fmt.Println(string(out))
}

func readQueries(path string, phrase bool, slop int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var q struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, err
		}
		if w := strings.Fields(q.Text); phrase && len(w) >= 2 {
			suffix := ""
			if slop > 0 {
				suffix = fmt.Sprintf("~%d", slop)
			}
			q.Text = `"` + w[0] + " " + w[1] + `"` + suffix + " " + strings.Join(w[2:], " ")
		}
		out = append(out, q.Text)
	}
	return out, sc.Err()
}

// overHTTP collects usage.latencyMs of the last round's retrieves.
func overHTTP(url, mode string, k, rounds int, qs []string) (lat []float64, withHits int, err error) {
	ctx := context.Background()
	c, err := rcp.ConnectHTTP(ctx, url, nil)
	if err != nil {
		return nil, 0, err
	}
	defer c.Close()
	for r := 0; r < rounds; r++ {
		lat, withHits = lat[:0], 0
		for _, q := range qs {
			res, err := c.Retrieve(ctx, &rcp.RetrieveParams{Query: rcp.TextQuery(q), K: k, Mode: mode})
			if err != nil {
				return nil, 0, err
			}
			if res.Usage == nil || res.Usage.LatencyMs == nil {
				return nil, 0, fmt.Errorf("no usage.latencyMs in the response")
			}
			lat = append(lat, *res.Usage.LatencyMs)
			if len(res.Hits) > 0 {
				withHits++
			}
		}
	}
	return lat, withHits, nil
}

// inProcess times Index.Search (top k, no stored documents) per query.
func inProcess(dir string, k, rounds int, qs []string) (lat []float64, withHits int, err error) {
	ctx := context.Background()
	ix, err := index.Open(ctx, dir, index.Options{NoBackground: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, 0, err
	}
	defer ix.Close()
	st := ix.Stats()
	fmt.Fprintf(os.Stderr, "index: %d docs, %d segments, %d segment bytes, %d of them positions\n", st.Docs, st.Segments, st.SegmentBytes, st.PositionBytes)
	for r := 0; r < rounds; r++ {
		lat, withHits = lat[:0], 0
		for _, q := range qs {
			t := time.Now()
			res, err := ix.Search(ctx, search.Query{Text: q, K: k, SkipDocs: true})
			if err != nil {
				return nil, 0, err
			}
			lat = append(lat, float64(time.Since(t).Nanoseconds())/1e6)
			if len(res.Hits) > 0 {
				withHits++
			}
		}
	}
	return lat, withHits, nil
}
