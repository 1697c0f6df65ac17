package index

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Upsert makes tools the complete set of documents for server: new tools
// are added, changed ones replaced and tools no longer listed deleted, in
// one batch. Every tool's ServerName must equal server. Invalid input
// changes nothing.
func (ix *Index) Upsert(server string, tools []config.ToolMetadata) error {
	if err := checkServer(server); err != nil {
		return err
	}
	docs := make(map[string]map[string]any, len(tools))
	siblings := siblingNames(tools)
	for i, t := range tools {
		switch {
		case t.ServerName != server:
			return fmt.Errorf("upserting %q: tool %d (%q) belongs to server %q", server, i, t.Name, t.ServerName)
		case strings.TrimSpace(t.Name) == "":
			return fmt.Errorf("upserting %q: tool %d has an empty name", server, i)
		}
		id := t.ID()
		if _, dup := docs[id]; dup {
			return fmt.Errorf("upserting %q: tool %q is listed twice", server, t.Name)
		}
		docs[id] = document(t, ix.features, siblings)
	}
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	if err := ix.replace(server, docs); err != nil {
		return err
	}
	if ix.sources == nil {
		ix.sources = map[string][]config.ToolMetadata{}
	}
	ix.sources[server] = slices.Clone(tools)
	return nil
}

// Remove deletes every document of server. Removing a server the index
// does not hold is not an error.
func (ix *Index) Remove(server string) error {
	if err := checkServer(server); err != nil {
		return err
	}
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	if err := ix.replace(server, nil); err != nil {
		return err
	}
	delete(ix.sources, server)
	return nil
}

func checkServer(server string) error {
	if server == "" || strings.Contains(server, ":") {
		return fmt.Errorf("invalid server name %q: want a non-empty name without ':'", server)
	}
	return nil
}

// replace swaps server's documents for docs in a single batch. The caller
// holds wmu.
func (ix *Index) replace(server string, docs map[string]map[string]any) error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return ErrClosed
	}
	changed := false
	defer func() { // after statsMu is released, before mu is
		if changed {
			ix.vocabularyChanged()
		}
	}()

	old, err := ix.serverDocIDs(server)
	if err != nil {
		return fmt.Errorf("listing documents of %q: %w", server, err)
	}
	batch := ix.bleve.NewBatch()
	for _, id := range old {
		if _, keep := docs[id]; !keep {
			batch.Delete(id)
		}
	}
	// One server token per document: the server filter of a mention
	// search needs the field's statistics too.
	st := serverStats{Docs: len(docs), Tokens: map[string]int{fieldServer: len(docs)}, ToolTerms: map[string][]string{}}
	terms := map[string]bool{}
	for id, doc := range docs {
		_, name, _ := config.SplitToolID(id)
		own := map[string]bool{}
		for _, f := range textFields {
			toks := ix.analyzer.Analyze([]byte(doc[f].(string)))
			st.Tokens[f] += len(toks)
			if f == fieldAll {
				for _, tok := range toks {
					terms[string(tok.Term)] = true
					own[string(tok.Term)] = true
				}
				if ix.lex != nil {
					// The synonym field is derived from the analyzed
					// combined text, already at hand.
					syn := ix.lex.synText(toks)
					doc[fieldSyn] = syn
					st.Tokens[fieldSyn] += len(strings.Fields(syn))
				}
			}
		}
		if ix.learned != nil {
			if words := ix.learned(id); len(words) > 0 {
				doc[fieldLearned] = strings.Join(words, " ")
				st.Tokens[fieldLearned] += len(words)
				if st.Learned == nil {
					st.Learned = map[string][]string{}
				}
				st.Learned[name] = slices.Compact(slices.Sorted(slices.Values(words)))
			}
		}
		if err := batch.Index(id, doc); err != nil {
			return fmt.Errorf("indexing %q: %w", id, err)
		}
		st.Tools = append(st.Tools, name)
		st.ToolTerms[name] = slices.Sorted(maps.Keys(own))
		if deprecated(doc[fieldDescription].(string)) {
			st.Deprecated = append(st.Deprecated, name)
		}
	}
	st.Terms = slices.Sorted(maps.Keys(terms))
	slices.Sort(st.Tools)
	slices.Sort(st.Deprecated)
	if batch.Size() == 0 {
		return nil
	}
	if len(docs) == 0 {
		batch.DeleteInternal(statsKey(server))
	} else {
		raw, err := json.Marshal(st)
		if err != nil {
			return fmt.Errorf("encoding statistics: %w", err)
		}
		batch.SetInternal(statsKey(server), raw)
	}
	bm25 := adjust(ix.bm25, ix.stats[server], st)

	ix.statsMu.Lock()
	defer ix.statsMu.Unlock()
	if err := ix.bleve.Batch(batch); err != nil {
		return fmt.Errorf("writing documents of %q: %w", server, err)
	}
	prev, hadPrev := ix.stats[server]
	if len(docs) == 0 {
		delete(ix.stats, server)
	} else {
		ix.stats[server] = st
	}
	ix.lookup.update(server, prev, st, hadPrev)
	ix.bm25 = withLearned(bm25, ix.stats)
	changed = true
	return nil
}

// serverDocIDs returns the ids of every document of server.
func (ix *Index) serverDocIDs(server string) ([]string, error) {
	total, err := ix.bleve.DocCount()
	if err != nil || total == 0 {
		return nil, err
	}
	q := query.NewTermQuery(server)
	q.SetField(fieldServer)
	req := bleve.NewSearchRequestOptions(q, int(total), 0, false)
	req.Score = "none"
	// Statistics, though unused without scoring, spare Bleve from walking
	// the field's whole term dictionary to compute its own.
	req.PreSearchData = map[string]any{search.BM25PreSearchDataKey: &search.BM25Stats{
		DocCount: float64(total), FieldCardinality: map[string]int{fieldServer: int(total)},
	}}
	res, err := ix.bleve.Search(req)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	return ids, nil
}

// document is what the index stores for one tool under f (Params,
// ParamDescriptions, SkipSiblingNames); siblings is the set of code-style
// names of its server's tools (siblingNames).
func document(t config.ToolMetadata, f Features, siblings map[string]bool) map[string]any {
	clean := asIs
	if f.SkipSiblingNames {
		clean = func(s string) string { return withoutNames(s, siblings, t.Name) }
	}
	desc := clean(t.Description)
	params, inAll := "", ""
	if f.Params {
		withDescs := clean
		if f.ParamDescriptions == ParamDescriptionsOff {
			withDescs = nil
		}
		params = paramsWords(t.ParamsJSON, withDescs)
		inAll = params
		switch f.ParamDescriptions {
		case ParamDescriptionsParamsField:
			inAll = paramsWords(t.ParamsJSON, nil)
		case ParamDescriptionsAllField:
			params = paramsWords(t.ParamsJSON, nil)
		}
	}
	return map[string]any{
		fieldServer:      t.ServerName,
		fieldName:        t.Name,
		fieldDescription: desc,
		fieldParams:      params,
		fieldAll:         strings.Join([]string{t.ServerName, t.Name, desc, inAll}, "\n"),
	}
}
