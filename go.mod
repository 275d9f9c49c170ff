module github.com/rcpgo/rcpgo

go 1.26.8
