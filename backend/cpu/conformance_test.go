package cpu_test

import (
	"testing"

	"github.com/peel-ml/peel/backend/backendtest"
	"github.com/peel-ml/peel/backend/cpu"
)

// TestConformance runs the backend conformance suite on the CPU backend.
func TestConformance(t *testing.T) { backendtest.Run(t, cpu.New()) }
