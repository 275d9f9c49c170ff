package ann

// cand is a graph node (slot) with its similarity to the query.
type cand struct {
	slot  int32
	score float32
}

// maxHeap pops the highest score first.
type maxHeap []cand

func (h *maxHeap) push(c cand) {
	*h = append(*h, c)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if a[p].score >= a[i].score {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *maxHeap) pop() cand {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && a[l].score > a[m].score {
			m = l
		}
		if r < n && a[r].score > a[m].score {
			m = r
		}
		if m == i {
			break
		}
		a[m], a[i] = a[i], a[m]
		i = m
	}
	*h = a
	return top
}

// minHeap keeps the best ef results with the worst on top.
type minHeap []cand

func (h *minHeap) push(c cand) {
	*h = append(*h, c)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if a[p].score <= a[i].score {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *minHeap) pop() cand {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && a[l].score < a[m].score {
			m = l
		}
		if r < n && a[r].score < a[m].score {
			m = r
		}
		if m == i {
			break
		}
		a[m], a[i] = a[i], a[m]
		i = m
	}
	*h = a
	return top
}

// visited is the set of slots a walk has reached: one bit per slot, so
// the set of a million-vector index is 125 KiB that stays in cache where
// a word per slot would not, and reset clears only the words the last
// walk touched.
type visited struct {
	bits     []uint64
	touched  []int32 // indexes of the words of bits that are not zero
	frontier maxHeap // searchLayer's frontier, reused from walk to walk
}

func (v *visited) reset(n int) {
	words := (n + 63) / 64
	if len(v.bits) < words {
		v.bits = make([]uint64, words+words/4)
		v.touched = v.touched[:0]
		return
	}
	if len(v.touched) > len(v.bits)/8 {
		clear(v.bits)
	} else {
		for _, w := range v.touched {
			v.bits[w] = 0
		}
	}
	v.touched = v.touched[:0]
}

// seen reports whether s was visited.
func (v *visited) seen(s int32) bool { return v.bits[s>>6]&(1<<(s&63)) != 0 }

// visit marks s and reports whether it was unvisited.
func (v *visited) visit(s int32) bool {
	w := s >> 6
	b := v.bits[w]
	bit := uint64(1) << (s & 63)
	if b&bit != 0 {
		return false
	}
	if b == 0 {
		v.touched = append(v.touched, w)
	}
	v.bits[w] = b | bit
	return true
}
