package search

import "errors"

// Errors a backend reports, which the engine answers with RCP codes.
var (
	// ErrSnapshotGone means a pinned version is no longer retained (or was
	// never served by this backend).
	ErrSnapshotGone = errors.New("search: snapshot no longer available")
	// ErrBadVersion means a version string is malformed.
	ErrBadVersion = errors.New("search: malformed version")
	// ErrTooManyTerms means a query has more distinct analysed terms than
	// Query.MaxTerms.
	ErrTooManyTerms = errors.New("search: too many distinct query terms")
	// ErrUnavailable means a remote backend cannot be reached now (an
	// outage, an overloaded cluster): the call may be retried.
	ErrUnavailable = errors.New("search: the backend is unavailable")
)
