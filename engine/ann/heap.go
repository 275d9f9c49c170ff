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

// visited is a generation-stamped visited set.
type visited struct {
	marks []uint32
	gen   uint32
}

func (v *visited) reset(n int) {
	if len(v.marks) < n {
		v.marks = make([]uint32, n+n/4)
		v.gen = 0
	}
	v.gen++
	if v.gen == 0 {
		clear(v.marks)
		v.gen = 1
	}
}

// visit marks s and reports whether it was unvisited.
func (v *visited) visit(s int32) bool {
	if v.marks[s] == v.gen {
		return false
	}
	v.marks[s] = v.gen
	return true
}
