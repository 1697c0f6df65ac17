package main

import (
	"context"
	"fmt"
	"io"
)

// runBench dispatches `mcproxy bench` to the profiler.
//
// TODO(coordinator): once package bench exposes
// Main(ctx, args, stdout, stderr) int, replace this body with
// `return bench.Main(ctx, args, stdout, stderr)` (import
// "github.com/mcproxy/mcproxy/bench").
func runBench(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "mcproxy bench: the profiler is not built into this binary yet")
	return exitError
}
