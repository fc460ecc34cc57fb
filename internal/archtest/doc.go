// Package archtest keeps ARCHITECTURE.md's map of the packages true. It
// has no code of its own: its test reads the document's package table
// (each package's path and the peel packages it imports) and its
// layering (a numbered list of levels under "Layering."), and checks
// them against the real imports of every package of the module, read
// with go/build's ImportDir in the default build context (the host's
// GOOS and GOARCH, no build tags; imports made only under a tag, such as
// openblas, are not checked). It fails when a row is wrong or missing,
// when a package imports one on its own level or above, or when the
// closure of a package's imports (what go list -deps lists) holds a
// package it must not depend on: nn no transforms or interpreter,
// compiler no array API and no customop.
//
// Run it with go test ./internal/archtest/.
package archtest
