package engine

import (
	"github.com/rcpgo/rcpgo/engine/internal/catalog"
	"github.com/rcpgo/rcpgo/engine/internal/integrity"
)

// The data directory's lock holder and repair (engine/internal/integrity).
type (
	// Holder describes the process holding a data directory: the engine
	// that takes a directory's lock writes its Holder (Config.Holder, with
	// its PID) into DIR/LOCK, so a second process that finds the directory
	// held can say by whom, and how to reach it instead.
	Holder = integrity.Holder
	// LockedError is the ErrLocked of a data directory, naming its holder.
	LockedError = integrity.LockedError
	// RepairReport is what Repair did to a data directory.
	RepairReport = integrity.RepairReport
	// Salvage describes a bbolt file rebuilt from its readable records.
	Salvage = integrity.Salvage
)

// ErrLocked means another process has the data directory open.
var ErrLocked = integrity.ErrLocked

// HeldBy reports whether another process holds dir's lock, and which (as
// far as its LOCK file says). It does not take the lock: a process may
// take or release it right after.
func HeldBy(dir string) (Holder, bool) { return integrity.HeldBy(dir) }

// Repair makes a data directory that Open refuses, or whose checks after
// Open fail, openable again, deleting nothing: each damaged file is moved
// into dir/quarantine-<UTC time>/ and reported (see integrity.Repair for
// what is done to which file). The caller must not run rcpd on dir
// meanwhile.
func Repair(dir string) (*RepairReport, error) { return integrity.Repair(dir, catalog.Forget) }
