package main

import (
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine"
)

func TestApplyAgentic(t *testing.T) {
	var cfg engine.Config
	fc := fileConfig{WordNet: "none", Session: sessionConfig{TTLSeconds: 60, MaxSessions: 5}, Feedback: feedbackConfig{Threshold: 4, PriorWeight: -1}}
	if err := applyAgentic(&cfg, &fc); err != nil {
		t.Fatal(err)
	}
	if cfg.WordNetDir != "none" || cfg.Session.TTL != time.Minute || cfg.Session.MaxSessions != 5 || cfg.Feedback.Threshold != 4 || cfg.Feedback.PriorWeight != -1 {
		t.Fatalf("%+v %+v", cfg.Session, cfg.Feedback)
	}
	for _, bad := range []fileConfig{
		{Session: sessionConfig{TTLSeconds: -1}},
		{Feedback: feedbackConfig{PriorWeight: 0.9}},
		{Feedback: feedbackConfig{Threshold: -2}},
	} {
		if err := applyAgentic(&cfg, &bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
