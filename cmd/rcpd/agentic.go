package main

import (
	"fmt"
	"time"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/engine/feedback"
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

// applyAgentic copies the session, feedback and WordNet settings into cfg.
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
	cfg.WordNetDir = fc.WordNet
	cfg.Session = session.Options{TTL: time.Duration(s.TTLSeconds) * time.Second, MaxSessions: s.MaxSessions,
		MaxSeen: s.MaxSeen, MaxEntries: s.MaxEntries}
	cfg.Feedback = feedback.Options{Threshold: f.Threshold, SuspicionsPerMinute: f.SuspicionsPerMinute,
		MaxQuarantinesPerHour: f.MaxQuarantinesPerHour, CallerQuarantinesPerHour: f.CallerQuarantinesPerHour,
		QuarantineTTL: time.Duration(f.QuarantineTTLSeconds) * time.Second, PriorWeight: f.PriorWeight,
		TrustedRelays: f.TrustedRelays}
	return nil
}
