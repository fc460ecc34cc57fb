// Package openblaslink links libopenblas into binaries built with
// -tags openblas; without the tag it is empty.
package openblaslink
