package rcp

import "strings"

// Method names of spec §7 and the notifications of §4.5.
const (
	MethodInitialize    = "initialize"
	MethodInfo          = "info"
	MethodPing          = "ping"
	MethodShutdown      = "shutdown"
	MethodEmbed         = "embed"
	MethodEmbedSparse   = "embed/sparse"
	MethodEmbedMulti    = "embed/multi"
	MethodRerank        = "rerank"
	MethodRetrieve      = "retrieve"
	MethodTransform     = "query/transform"
	MethodGraph         = "graph"
	MethodIndexAdd      = "index/add"
	MethodIndexDelete   = "index/delete"
	MethodCatalogList   = "catalog/list"
	MethodFeedback      = "feedback"
	MethodMemoryBuild   = "memory/build"
	MethodMemoryRecall  = "memory/recall"
	NotifyProgress      = "notifications/progress"
	NotifyCancel        = "notifications/cancel"
	NotifyLog           = "notifications/log"
	notificationsPrefix = "notifications/"
)

// Capability keys of spec §6.
const (
	CapEmbed       = "embed"
	CapSparseEmbed = "sparseEmbed"
	CapMultiVector = "multiVector"
	CapRerank      = "rerank"
	CapRetrieve    = "retrieve"
	CapTransform   = "transform"
	CapGraph       = "graph"
	CapIndex       = "index"
	CapSession     = "session"
	CapFeedback    = "feedback"
	CapMemory      = "memory"
	CapFilter      = "filter"
	CapStreaming   = "streaming"
	CapPagination  = "pagination"
	CapCitations   = "citations"
	CapLog         = "log"
	CapCatalog     = "catalog"
)

// methodCaps maps every gated core method to its capability key; the
// ungated methods map to "".
var methodCaps = map[string]string{
	MethodInitialize: "", MethodInfo: "", MethodPing: "", MethodShutdown: "",
	MethodEmbed: CapEmbed, MethodEmbedSparse: CapSparseEmbed, MethodEmbedMulti: CapMultiVector,
	MethodRerank: CapRerank, MethodRetrieve: CapRetrieve, MethodTransform: CapTransform,
	MethodGraph: CapGraph, MethodIndexAdd: CapIndex, MethodIndexDelete: CapIndex,
	MethodCatalogList: CapCatalog, MethodFeedback: CapFeedback,
	MethodMemoryBuild: CapMemory, MethodMemoryRecall: CapMemory,
}

// MethodCapability reports the capability key gating method. defined is false
// for names RCP does not define (answer -32004). Vendor methods "x-acme/foo"
// are defined exactly when they are well formed and gate on "x-acme".
// Ungated methods (initialize, info, ping, shutdown) return "", true.
func MethodCapability(method string) (capability string, defined bool) {
	if c, ok := methodCaps[method]; ok {
		return c, true
	}
	if v, ok := VendorOf(method); ok {
		return v, true
	}
	return "", false
}

// VendorOf returns "x-acme" for a well-formed vendor method "x-acme/name".
func VendorOf(method string) (string, bool) {
	if !strings.HasPrefix(method, "x-") {
		return "", false
	}
	vendor, name, ok := strings.Cut(method, "/")
	if !ok || len(vendor) <= 2 || name == "" {
		return "", false
	}
	return vendor, true
}

// IsNotification reports whether method is in the reserved notifications/ space.
func IsNotification(method string) bool { return strings.HasPrefix(method, notificationsPrefix) }

// Methods returns every core request method name of §7 (not notifications).
func Methods() []string {
	return []string{MethodInitialize, MethodInfo, MethodPing, MethodShutdown, MethodEmbed,
		MethodEmbedSparse, MethodEmbedMulti, MethodRerank, MethodRetrieve, MethodTransform,
		MethodGraph, MethodIndexAdd, MethodIndexDelete, MethodCatalogList, MethodFeedback,
		MethodMemoryBuild, MethodMemoryRecall}
}
