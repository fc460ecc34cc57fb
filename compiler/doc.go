// Package compiler turns an *interp.Graph into a fast program: graph
// passes, and an executor (Build, Program.Run) that runs a flat
// instruction list with fused elementwise groups and planned memory.
package compiler
