package index

import (
	"slices"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// expandFunc returns the expansion function for the current vocabulary.
// The background builder (buildExpanders) usually has it ready; when a
// search comes first, the search builds it. The caller holds statsMu for
// reading.
func (ix *Index) expandFunc() ExpandFunc {
	ix.expMu.Lock()
	defer ix.expMu.Unlock()
	if ix.expand == nil || ix.expVersion != ix.lookup.version {
		ix.installExpand(ix.lookup.version, ix.lookup.vocabulary(), nil)
	}
	return ix.expand
}

// installExpand makes fn (nil: a new one built from vocab) the expansion
// function of vocabulary version, unless a newer one is installed. An
// unchanged vocabulary keeps the function it has, and with it whatever
// that function has cached. The caller holds expMu.
func (ix *Index) installExpand(version int, vocab []string, fn ExpandFunc) {
	if ix.expand != nil && version <= ix.expVersion {
		return
	}
	if ix.expand != nil && slices.Equal(vocab, ix.expVocab) {
		ix.expVersion = version
		return
	}
	if fn == nil {
		fn = ix.newExpandFunc(vocab)
	}
	ix.expand, ix.expVersion, ix.expVocab = fn, version, vocab
}

// newExpandFunc calls Options.Expander, never returning nil. An Expander
// that panics is logged and replaced by no expansion for this vocabulary,
// whether a search or the background builder called it.
func (ix *Index) newExpandFunc(vocab []string) (fn ExpandFunc) {
	none := func([]string, func(string) bool) []WeightedTerm { return nil }
	defer func() {
		if p := recover(); p != nil {
			ix.log.Error("query expansion panicked while building; searching without it until the tools change",
				zap.Any("panic", p), zap.Stack("stack"))
			fn = none
		}
	}()
	if fn := ix.expander(vocab); fn != nil {
		return fn
	}
	return none
}

// vocabularyChanged starts building the expansion function of the new
// vocabulary in the background, so the next search does not pay for it
// (tens of milliseconds at 10,000 tools). Writes do not wait for it:
// Upsert, called once per server at start-up, stays as fast as without
// expansion, and a burst of them costs one build per change the builder
// sees, not one per Upsert. The caller holds mu for reading, so Close
// cannot start waiting for the builder before it is counted.
func (ix *Index) vocabularyChanged() {
	if ix.expander == nil {
		return
	}
	ix.expMu.Lock()
	defer ix.expMu.Unlock()
	ix.expDirty = true
	if ix.expBuilding {
		return // the running builder looks again before it stops
	}
	ix.expBuilding = true
	ix.expWG.Add(1)
	goroutine.Go(ix.log, "query expansion builder", ix.buildExpanders)
}

// buildExpanders builds expansion functions until it has built one for the
// latest vocabulary. It never holds expMu and statsMu together, and holds
// neither while building. The only code it runs that is not this
// package's, the Expander, is recovered (and logged) in newExpandFunc.
func (ix *Index) buildExpanders() {
	defer ix.expWG.Done()
	for {
		ix.expMu.Lock()
		if !ix.expDirty {
			ix.expBuilding = false
			ix.expMu.Unlock()
			return
		}
		ix.expDirty = false
		ix.expMu.Unlock()

		ix.statsMu.RLock()
		version, vocab := ix.lookup.version, ix.lookup.vocabulary()
		ix.statsMu.RUnlock()

		ix.expMu.Lock()
		stale := ix.expand == nil || version > ix.expVersion
		same := ix.expand != nil && slices.Equal(vocab, ix.expVocab)
		ix.expMu.Unlock()
		var fn ExpandFunc
		if stale && !same {
			fn = ix.newExpandFunc(vocab)
		}
		ix.expMu.Lock()
		ix.installExpand(version, vocab, fn)
		ix.expMu.Unlock()
	}
}
