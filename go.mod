module github.com/peel-ml/peel

go 1.26.8

require (
	github.com/pkg/errors v0.9.1 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
	gonum.org/v1/netlib v0.0.0-20230729102104-8b8060e7531f // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
