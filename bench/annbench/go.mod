module github.com/rcpgo/rcpgo/bench/annbench

go 1.26.8

require (
	github.com/coder/hnsw v0.6.1
	github.com/philippgille/chromem-go v0.7.0
	github.com/rcpgo/rcpgo v0.0.0-00010101000000-000000000000
)

require (
	github.com/chewxy/math32 v1.10.1 // indirect
	github.com/google/renameio v1.0.1 // indirect
	github.com/viterin/partial v1.1.0 // indirect
	github.com/viterin/vek v0.4.2 // indirect
	golang.org/x/exp v0.0.0-20241009180824-f66d83c29e7c // indirect
	golang.org/x/sys v0.41.0 // indirect
)

replace github.com/rcpgo/rcpgo => ../..

replace github.com/rcpgo/rcpgo/rcp => ../../rcp
