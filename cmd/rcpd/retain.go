package main

import (
	"fmt"
	"time"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/engine/retain"
)

// retainConfig bounds the superseded dense generations kept for the
// sessions that negotiated them (config key "denseRetain"; docs/rcpd.md,
// "Dense lifecycle"): zero values take the defaults (2 generations,
// 1024 MiB, 600 s), generations -1 keeps none.
type retainConfig struct {
	Generations  int   `json:"generations"`
	MiB          int64 `json:"mib"`
	GraceSeconds int   `json:"graceSeconds"`
}

func applyRetain(cfg *engine.Config, r retainConfig) error {
	if r.Generations < -1 || r.MiB < 0 || r.GraceSeconds < 0 {
		return fmt.Errorf("config denseRetain: generations must be ≥ -1, mib and graceSeconds ≥ 0")
	}
	cfg.DenseRetain = retain.Options{Max: r.Generations, Budget: r.MiB << 20, Grace: time.Duration(r.GraceSeconds) * time.Second}
	return nil
}
