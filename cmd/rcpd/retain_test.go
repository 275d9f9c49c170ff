package main

import (
	"testing"
	"time"

	"github.com/rcpgo/rcpgo/engine"
)

func TestApplyRetain(t *testing.T) {
	var cfg engine.Config
	if err := applyRetain(&cfg, retainConfig{Generations: 3, MiB: 256, GraceSeconds: 60}); err != nil {
		t.Fatal(err)
	}
	if o := cfg.DenseRetain; o.Max != 3 || o.Budget != 256<<20 || o.Grace != time.Minute {
		t.Fatalf("%+v", o)
	}
	for _, bad := range []retainConfig{{Generations: -2}, {MiB: -1}, {GraceSeconds: -1}} {
		if err := applyRetain(&cfg, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
