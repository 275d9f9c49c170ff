package main

import (
	"fmt"
	"time"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/engine/feedback"
	"github.com/rcpgo/rcpgo/engine/memory"
	"github.com/rcpgo/rcpgo/engine/session"
)

// sessionConfig bounds the sessionId state (config key "session").
type sessionConfig struct {
	TTLSeconds  int `json:"ttlSeconds"`
	MaxSessions int `json:"maxSessions"`
	MaxSeen     int `json:"maxSeen"`
	MaxEntries  int `json:"maxEntries"`
}

// feedbackConfig tunes quarantine and the ranking prior (config key
// "feedback"); zero values take the engine/feedback defaults and
// priorWeight -1 switches the prior off.
type feedbackConfig struct {
	Threshold                int     `json:"threshold"`
	SuspicionsPerMinute      int     `json:"suspicionsPerMinute"`
	MaxQuarantinesPerHour    int     `json:"maxQuarantinesPerHour"`
	CallerQuarantinesPerHour int     `json:"callerQuarantinesPerHour"`
	QuarantineTTLSeconds     int     `json:"quarantineTTLSeconds"`
	PriorWeight              float64 `json:"priorWeight"`
	// TrustedRelays are callers ("token:NAME") whose forwarded feedback may
	// name the client it relays (an rcpd gateway's token).
	TrustedRelays []string `json:"trustedRelays"`
}

// memoryConfig bounds the memories of memory/build (config key "memory");
// zero values take the engine/memory defaults.
type memoryConfig struct {
	MaxMemories int   `json:"maxMemories"` // persisted (global) memories
	MaxSession  int   `json:"maxSession"`  // session memories
	MaxDocs     int   `json:"maxDocs"`     // documents per memory
	MaxBytes    int64 `json:"maxBytes"`    // text bytes of all memories together
}

// applyAgentic copies the session, feedback, memory and WordNet settings
// into cfg.
func applyAgentic(cfg *engine.Config, fc *fileConfig) error {
	s := fc.Session
	if s.TTLSeconds < 0 || s.MaxSessions < 0 || s.MaxSeen < 0 || s.MaxEntries < 0 {
		return fmt.Errorf("config session: values must be non-negative")
	}
	f := fc.Feedback
	if f.Threshold < 0 || f.SuspicionsPerMinute < 0 || f.MaxQuarantinesPerHour < 0 || f.CallerQuarantinesPerHour < 0 ||
		f.QuarantineTTLSeconds < 0 || f.PriorWeight > feedback.MaxPriorWeight {
		return fmt.Errorf("config feedback: counts must be non-negative and priorWeight at most %v", feedback.MaxPriorWeight)
	}
	if m := fc.Memory; m.MaxMemories < 0 || m.MaxSession < 0 || m.MaxDocs < 0 || m.MaxBytes < 0 {
		return fmt.Errorf("config memory: values must be non-negative")
	}
	cfg.Memory = memory.Options{MaxMemories: fc.Memory.MaxMemories, MaxSession: fc.Memory.MaxSession,
		MaxDocs: fc.Memory.MaxDocs, MaxBytes: fc.Memory.MaxBytes}
	cfg.WordNetDir = fc.WordNet
	cfg.Session = session.Options{TTL: time.Duration(s.TTLSeconds) * time.Second, MaxSessions: s.MaxSessions,
		MaxSeen: s.MaxSeen, MaxEntries: s.MaxEntries}
	cfg.Feedback = feedback.Options{Threshold: f.Threshold, SuspicionsPerMinute: f.SuspicionsPerMinute,
		MaxQuarantinesPerHour: f.MaxQuarantinesPerHour, CallerQuarantinesPerHour: f.CallerQuarantinesPerHour,
		QuarantineTTL: time.Duration(f.QuarantineTTLSeconds) * time.Second, PriorWeight: f.PriorWeight,
		TrustedRelays: f.TrustedRelays}
	return nil
}
