// Command mcproxy is an MCP proxy: one MCP endpoint (stdio, streamable HTTP,
// legacy SSE) in front of many upstream MCP servers, with tool discovery
// (retrieve_tools / call_tool) instead of every tool in the model's context.
//
// Usage:
//
//	mcproxy serve [--config F] [--stdio] [--listen ADDR] [--mode retrieve|direct]
//	mcproxy search "QUERY" [--config F] [--limit N]
//	mcproxy list [tools|prompts|resources] [--config F] [--mode retrieve|direct]
//	mcproxy doctor [--config F] [--json] [--timeout D]
//	mcproxy sessions list|show ID|archive ID BLOCK|rebuild ID [--config F]
//	mcproxy bench ...
//	mcproxy version
//
// This package holds flags and wiring only: it loads the config, decides
// where logs go, and connects internal/upstream, internal/index,
// internal/arms, internal/session and internal/server.
//
// Its size (about 5,400 lines, over the project's guide of 3,000 for one
// package) is one concern, the command line: each of its nineteen commands
// is a file of flag parsing, wiring and printing over internal packages
// that hold the behaviour (serve.go and wire.go compose the running proxy,
// bench*.go hand over to bench/, the rest read or edit the data dir). The
// commands share the config loading, the logger, the data-dir paths and
// the exit-code conventions of run.go; split into packages, those would
// have to be exported for the binary alone, and no file would get shorter.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcproxy/mcproxy/internal/goroutine"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal starts a graceful shutdown, a second one gets
	// the default behaviour: the process dies at once.
	goroutine.Go(nil, "second signal", func() {
		<-ctx.Done()
		stop()
	})
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
