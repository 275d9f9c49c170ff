#!/usr/bin/env python3
"""Independent reference for the eval package's metrics, written from
trec_eval 9.x's documented definitions (not from the Go code):

* relevance level 1: a document is relevant when its grade >= 1;
* the run is re-ordered by score descending, ties by docno descending
  (strcmp), the rank column is ignored;
* -c: every query of the qrels is averaged, queries without results score 0;
* ndcg_cut_k: gain = grade (grades <= 0 give 0), discount log2(rank + 1),
  ideal from the qrels grades sorted descending, cut at k;
* P_k divides by k; recall_k by the number of relevant documents;
  map_cut_k sums precision at relevant ranks <= k over num_rel;
  recip_rank has no cutoff, mrr@k (BEIR) is recip_rank cut at k.

Usage: trec_eval_ref.py QRELS RUN > EXPECTED.tsv
       trec_eval_ref.py --make-random SEED PREFIX   (writes PREFIX.qrels/.run)
Output lines: "qid<TAB>metric<TAB>value" with value printed by repr(), and
"all" for the means.
"""
import math
import random
import sys

METRICS = ["ndcg@5", "ndcg@10", "ndcg@100", "ndcg", "recall@5", "recall@10", "recall@100", "recall",
           "mrr@10", "mrr", "map", "map@10", "map@100", "p@1", "p@5", "p@10", "p@100"]


def read_qrels(path):
    q = {}
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        qid, _, doc, rel = line.split()
        q.setdefault(qid, {})[doc] = int(rel)
    return q


def read_run(path):
    r = {}
    for line in open(path):
        f = line.split()
        if not f:
            continue
        r.setdefault(f[0], []).append((float(f[4]), f[2]))
    out = {}
    for qid, lst in r.items():
        # score desc, docno desc: sort by (score, docno) descending
        lst.sort(key=lambda t: (t[0], t[1]), reverse=True)
        out[qid] = [d for _, d in lst]
    return out


def measures(judged, ranking):
    rels = sorted((g for g in judged.values() if g > 0), reverse=True)
    num_rel = len(rels)
    gain = [max(judged.get(d, 0), 0) for d in ranking]
    res = {}
    for m in METRICS:
        name, _, k = m.partition("@")
        k = int(k) if k else None
        top = gain if k is None else gain[:k]
        if name == "ndcg":
            ideal = rels if k is None else rels[:k]
            idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
            d = sum(g / math.log2(i + 2) for i, g in enumerate(top) if g > 0)
            res[m] = d / idcg if idcg > 0 else 0.0
        elif name == "recall":
            res[m] = sum(1 for g in top if g > 0) / num_rel if num_rel else 0.0
        elif name == "p":
            res[m] = sum(1 for g in top if g > 0) / k
        elif name == "mrr":
            res[m] = next((1.0 / (i + 1) for i, g in enumerate(top) if g > 0), 0.0)
        elif name == "map":
            s, n = 0.0, 0
            for i, g in enumerate(top):
                if g > 0:
                    n += 1
                    s += n / (i + 1)
            res[m] = s / num_rel if num_rel else 0.0
    return res


def make_random(seed, prefix):
    rnd = random.Random(seed)
    with open(prefix + ".qrels", "w") as fq, open(prefix + ".run", "w") as fr:
        for q in range(1, 41):
            qid = str(q)
            docs = ["D%03d" % i for i in range(300)]
            judged = rnd.sample(docs, rnd.randint(1, 40))
            for d in judged:
                fq.write("%s 0 %s %d\n" % (qid, d, rnd.choice([-1, 0, 0, 1, 1, 2, 3, 4])))
            if q % 13 == 0:
                continue  # judged but absent from the run (-c)
            ranked = rnd.sample(docs, rnd.randint(0, 150))
            for i, d in enumerate(ranked):
                score = round(rnd.uniform(0, 10), 1)  # one decimal: many ties
                fr.write("%s Q0 %s %d %s random\n" % (qid, d, i + 1, repr(score)))


def main():
    if sys.argv[1] == "--make-random":
        make_random(int(sys.argv[2]), sys.argv[3])
        return
    qrels, run = read_qrels(sys.argv[1]), read_run(sys.argv[2])
    total = {m: 0.0 for m in METRICS}
    for qid in sorted(qrels):
        res = measures(qrels[qid], run.get(qid, []))
        for m in METRICS:
            print("%s\t%s\t%r" % (qid, m, res[m]))
            total[m] += res[m]
    for m in METRICS:
        print("all\t%s\t%r" % (m, total[m] / len(qrels)))


if __name__ == "__main__":
    main()
