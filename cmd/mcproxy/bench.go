package main

import (
	"context"
	"io"

	"github.com/mcproxy/mcproxy/bench"
)

// runBench hands `mcproxy bench ...` to the profiler.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return bench.Main(ctx, args, stdout, stderr)
}
