// Package retrieval is mcproxy's one tool ranking: the BM25 index
// (internal/index, with its synonyms, query expansion, exact names, server
// mentions and deprecated-tool demotion), fused with dense retrieval
// (internal/embed) when an embeddings provider is configured, and the
// weak-match judgement that decides whether retrieve_tools also lists the
// servers. `mcproxy serve` answers retrieve_tools with it, `mcproxy search`
// prints it and `mcproxy bench` scores it, so the profiler's figures are the
// production ranking (bench's TestRankingIsRetrieveTools checks that
// through the real MCP front).
//
// A ranking at one limit is the start of the ranking at any larger one: the
// profiler scores whole rankings, retrieve_tools returns the first few.
//
// The package starts no goroutines of its own (the index and the dense
// retriever it holds each own theirs), does no logging and knows nothing
// about MCP.
package retrieval

import (
	"context"
	"errors"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/embed"
	"github.com/mcproxy/mcproxy/internal/index"
)

// Ranking is the answer to one search.
type Ranking struct {
	// Hits are the ranked tools, best first. A hit's Score is BM25's, or
	// the reciprocal-rank-fusion score when dense retrieval took part (or
	// the cosine similarity with Options.DenseOnly); Coverage is BM25's,
	// zero for a tool only dense retrieval found.
	Hits []index.Hit
	// Weak reports that the query's wording matches the tools poorly: BM25
	// found nothing, or its best hit's coverage is below
	// index.WeakCoverage. It is judged on the BM25 ranking even when dense
	// retrieval reorders it, since a dense hit carries no coverage (and so
	// is false with Options.DenseOnly).
	Weak bool
	// DenseErr says why dense retrieval took no part although a provider is
	// configured (the hits are then BM25's alone); nil when it took part,
	// when nothing is embedded yet, or when no provider is configured.
	DenseErr error
}

// Options tune a Pipeline. The zero value is production.
type Options struct {
	// DenseOnly ranks by embedding similarity alone, without BM25: a
	// variant the profiler's ablation measures, never what mcproxy serves.
	// It needs a Dense.
	DenseOnly bool
}

// Pipeline ranks tools for a query. It owns the index and the dense
// retriever it is built on: Close closes both. It is safe for concurrent
// use.
type Pipeline struct {
	ix    *index.Index
	dense *embed.Dense // nil = BM25 alone
	opts  Options
}

// New builds the pipeline over ix (required) and dense (nil = no
// embeddings provider, BM25 alone).
func New(ix *index.Index, dense *embed.Dense, opts Options) (*Pipeline, error) {
	switch {
	case ix == nil:
		return nil, errors.New("retrieval: an index is required")
	case opts.DenseOnly && dense == nil:
		return nil, errors.New("retrieval: dense-only ranking needs an embeddings provider")
	}
	return &Pipeline{ix: ix, dense: dense, opts: opts}, nil
}

// Upsert makes tools the complete set of server's tools. The index takes
// them at once; dense retrieval embeds them in the background, and its only
// possible refusal (it is closed) leaves BM25 complete, so it is not an
// error.
func (p *Pipeline) Upsert(server string, tools []config.ToolMetadata) error {
	if err := p.ix.Upsert(server, tools); err != nil {
		return err
	}
	_ = p.dense.Upsert(server, tools)
	return nil
}

// Remove drops every tool of server.
func (p *Pipeline) Remove(server string) error {
	p.dense.Remove(server)
	return p.ix.Remove(server)
}

// Search ranks up to limit tools for query. The BM25 ranking is fetched at
// least as deep as dense retrieval fuses (embed.Dense.Depth), so the fused
// order never depends on limit. A failing embeddings provider never fails a
// search: the ranking is then BM25's, and DenseErr says why.
func (p *Pipeline) Search(ctx context.Context, query string, limit int) (Ranking, error) {
	if p.opts.DenseOnly {
		return p.denseOnly(ctx, query, limit)
	}
	lexical, err := p.ix.Search(ctx, query, max(limit, p.dense.Depth()))
	if err != nil {
		return Ranking{}, err
	}
	r := Ranking{Weak: len(lexical) == 0 || lexical[0].Weak()}
	r.Hits, r.DenseErr = p.dense.Hybrid(ctx, query, lexical, limit)
	return r, nil
}

func (p *Pipeline) denseOnly(ctx context.Context, query string, limit int) (Ranking, error) {
	if limit < 1 {
		return Ranking{}, errors.New("retrieval: limit must be 1 or more")
	}
	hits, err := p.dense.Search(ctx, query, limit)
	if err != nil {
		return Ranking{}, err
	}
	return Ranking{Hits: hits}, nil
}

// Sync waits until every tool has its vector (see embed.Dense.Sync); it
// returns at once without an embeddings provider.
func (p *Pipeline) Sync(ctx context.Context) error { return p.dense.Sync(ctx) }

// Close closes the dense retriever and the index.
func (p *Pipeline) Close() error {
	return errors.Join(p.dense.Close(), p.ix.Close())
}
