package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/goroutine"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// progress says on w, every interval, which servers a one-shot command is
// still waiting for (issue 18: `mcproxy search` was silent while a slow
// server connected). It returns the function that stops it and waits. A
// panic in one report is logged to log and the next report still comes.
func progress(w io.Writer, log *zap.Logger, status func() []upstream.Status, interval time.Duration) (stop func()) {
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	done := goroutine.Loop(ctx, log, "progress report", interval, func(time.Time) {
		if line := waitingFor(status()); line != "" {
			fmt.Fprintf(w, "mcproxy: %s waited, still connecting: %s\n", time.Since(start).Round(time.Second), line)
		}
	})
	return func() {
		cancel()
		<-done
	}
}

// waitingFor names the servers still connecting, "" when none is.
func waitingFor(statuses []upstream.Status) string {
	var names []string
	for _, s := range statuses {
		if s.State == upstream.StateConnecting {
			names = append(names, s.Server)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
