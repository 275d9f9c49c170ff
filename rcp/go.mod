module github.com/rcpgo/rcpgo/rcp

go 1.26.8
