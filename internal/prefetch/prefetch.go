// Package prefetch asks the CPU to bring memory into its caches ahead of
// use: for the search paths whose reads are scattered (the HNSW walk's
// codes and link rows, the BM25 scorer's field lengths), where each read
// would otherwise wait for memory in turn. It is a hint: it never faults
// and returns nothing, and it does nothing on architectures without a
// kernel for it.
package prefetch
