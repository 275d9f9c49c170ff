//go:build !amd64

package ann

// fastDot8: no vector kernel on this architecture, so the graph walk
// keeps scoring float32 vectors (see dot8_amd64.go).
const fastDot8 = false

func dot8(a, b []int8) int32 { return dot8Generic(a, b) }
