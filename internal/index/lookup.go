package index

import (
	"maps"
	"slices"
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
)

// lookup holds the in-memory tables derived from every server's
// statistics, updated server by server as batches land.
type lookup struct {
	vocab      map[string]int      // term → number of tools holding it
	tools      int                 // number of tools
	version    int                 // incremented by every update
	serverKeys map[string][]string // serverKeys spelling → servers
	names      map[string][]string // lower-cased tool name → ids
	ids        map[string]string   // lower-cased id → id
	deprecated int                 // number of deprecated tools
	learned    map[string]int      // learned term → number of tools that learned it
}

func newLookup() *lookup {
	return &lookup{vocab: map[string]int{}, learned: map[string]int{}, serverKeys: map[string][]string{}, names: map[string][]string{}, ids: map[string]string{}}
}

// update replaces server's entries: old out, new in.
func (l *lookup) update(server string, old, new serverStats, hadOld bool) {
	l.version++
	if hadOld {
		l.tools -= len(old.Tools)
		l.deprecated -= len(old.Deprecated)
		for _, terms := range old.ToolTerms {
			for _, t := range terms {
				if l.vocab[t]--; l.vocab[t] <= 0 {
					delete(l.vocab, t)
				}
			}
		}
		for _, terms := range old.Learned {
			for _, t := range terms {
				if l.learned[t]--; l.learned[t] <= 0 {
					delete(l.learned, t)
				}
			}
		}
		for _, name := range old.Tools {
			id := config.ToolID(server, name)
			delete(l.ids, strings.ToLower(id))
			key := strings.ToLower(name)
			l.names[key] = slices.DeleteFunc(slices.Clone(l.names[key]), func(x string) bool { return x == id })
			if len(l.names[key]) == 0 {
				delete(l.names, key)
			}
		}
		for _, k := range serverKeys(server) {
			l.serverKeys[k] = slices.DeleteFunc(slices.Clone(l.serverKeys[k]), func(x string) bool { return x == server })
			if len(l.serverKeys[k]) == 0 {
				delete(l.serverKeys, k)
			}
		}
	}
	if new.Docs == 0 {
		return
	}
	l.tools += len(new.Tools)
	l.deprecated += len(new.Deprecated)
	for _, terms := range new.ToolTerms {
		for _, t := range terms {
			l.vocab[t]++
		}
	}
	for _, terms := range new.Learned {
		for _, t := range terms {
			l.learned[t]++
		}
	}
	for _, name := range new.Tools {
		id := config.ToolID(server, name)
		l.ids[strings.ToLower(id)] = id
		key := strings.ToLower(name)
		l.names[key] = append(slices.Clone(l.names[key]), id)
		slices.Sort(l.names[key])
	}
	for _, k := range serverKeys(server) {
		l.serverKeys[k] = append(slices.Clone(l.serverKeys[k]), server)
		slices.Sort(l.serverKeys[k])
	}
}

// Vocabulary returns the distinct analyzed terms the index holds, sorted:
// what query expansion may add.
func (ix *Index) Vocabulary() []string {
	ix.statsMu.RLock()
	defer ix.statsMu.RUnlock()
	return ix.lookup.vocabulary()
}

func (l *lookup) vocabulary() []string {
	return slices.Sorted(maps.Keys(l.vocab))
}
