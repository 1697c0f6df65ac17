package main

import (
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestMain fails the package when a goroutine outlives its tests: every
// goroutine a command starts ends before the command returns.
func TestMain(m *testing.M) { testenv.VerifyNoLeaks(m) }
