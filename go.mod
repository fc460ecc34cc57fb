module github.com/peel-ml/peel

go 1.25

require (
	golang.org/x/sys v0.33.0
	gonum.org/v1/gonum v0.17.0
	gonum.org/v1/netlib v0.0.0-20230729102104-8b8060e7531f
	pgregory.net/rapid v1.3.0
)
