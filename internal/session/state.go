package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// stateVersion is the format of state.json.
const stateVersion = 1

// savedState is state.json: the noa state and the transcript record it
// reflects, so Open can tell a current state.json from one left behind.
type savedState struct {
	Version int                  `json:"version"`
	Seq     int64                `json:"seq"`
	State   noa.CompressionState `json:"state"`
}

func encodeState(seq int64, st noa.CompressionState) ([]byte, error) {
	// Compact: indenting took about a quarter of the encoding's time
	// (`jq . state.json` indents it for a reader).
	b, err := json.Marshal(savedState{Version: stateVersion, Seq: seq, State: st})
	if err != nil {
		return nil, fmt.Errorf("encoding state: %w", err)
	}
	return append(b, '\n'), nil
}

// readState reads state.json; ok is false when there is none.
func readState(path string) (savedState, bool, error) {
	var s savedState
	b, err := os.ReadFile(path)
	if notExist(err) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("reading state: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, false, fmt.Errorf("decoding %s: %w", path, err)
	}
	if s.Version != stateVersion {
		return s, false, fmt.Errorf("%s has format version %d; this mcproxy reads version %d", path, s.Version, stateVersion)
	}
	return s, true, nil
}

// sameState compares two states by their canonical JSON (map keys sorted),
// which is also what is on disk.
func sameState(a, b noa.CompressionState) bool {
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
}

// stateDiff names the parts of two states that differ, for reports.
func stateDiff(saved, rebuilt noa.CompressionState) string {
	var d []string
	eq := func(name string, a, b any) {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			d = append(d, name)
		}
	}
	eq("blocks", saved.Blocks, rebuilt.Blocks)
	eq("message refs", saved.MessageRefs, rebuilt.MessageRefs)
	eq("token snapshot", saved.TokenSnapshot, rebuilt.TokenSnapshot)
	eq("nudge pacing", saved.Nudge, rebuilt.Nudge)
	eq("stats", saved.Stats, rebuilt.Stats)
	eq("next block id", saved.NextBlockID, rebuilt.NextBlockID)
	eq("archive root", saved.ArchiveRoot, rebuilt.ArchiveRoot)
	eq("session id", saved.SessionID, rebuilt.SessionID)
	if len(d) == 0 {
		return "no difference"
	}
	return fmt.Sprintf("%s differ (saved: %d block(s), %d ref(s); transcript: %d block(s), %d ref(s))",
		strings.Join(d, ", "), len(saved.Blocks), len(saved.MessageRefs.ByRef), len(rebuilt.Blocks), len(rebuilt.MessageRefs.ByRef))
}

// replay is a session reconstructed from its transcript.
type replay struct {
	state noa.CompressionState
	// seq is the last record replayed; msgs the messages up to it.
	seq  int64
	msgs []noa.CoreMessage
	// originals maps a message id to its archived full result (relative to
	// archive/).
	originals map[string]string
	result    noa.RebuildResult
	// missing and recreated are archives a replay found absent (and, when
	// repairing, wrote again from the transcript).
	missing, recreated []string
	// engaged: a kindEngage record was replayed (Host.Engage).
	engaged bool
}

// replayTranscript rebuilds a session's state from its records up to and
// including seq upto (all records when upto < 0): noa.RebuildStateFromLog
// replays the Compress calls, then the pacing recorded with the last turn is
// restored and each block gets the creation time its call recorded.
func replayTranscript(recs []record, upto int64, id string, arch *Archiver, cfg noa.Config, count noa.TokenCountFn, repair bool) replay {
	rp := replay{originals: map[string]string{}}
	var last *pacing
	created := map[string]int64{}
	for _, r := range recs {
		if upto >= 0 && r.Seq > upto {
			break
		}
		rp.seq = r.Seq
		if r.Message != nil {
			rp.msgs = append(rp.msgs, r.Message.core())
			if r.Message.Original != "" {
				rp.originals[r.Message.ID] = r.Message.Original
			}
		}
		if r.Pacing != nil {
			last = r.Pacing
		}
		if r.Compress != nil {
			created[r.Compress.CallID] = r.Compress.Now
		}
		rp.engaged = rp.engaged || r.Kind == kindEngage
	}
	ra := &replayArchiver{a: arch, repair: repair}
	res := noa.RebuildStateFromLog(noa.RebuildInput{
		Messages:    rp.msgs,
		Config:      cfg,
		Archiver:    ra,
		SessionID:   id,
		ArchiveRoot: arch.Root,
		CountTokens: count,
	})
	st := res.State
	if last != nil {
		last.apply(&st)
	}
	for i := range st.Blocks {
		if t, ok := created[st.Blocks[i].CompressCallID]; ok {
			st.Blocks[i].CreatedAt = t
		}
	}
	rp.state, rp.result = st, res
	rp.missing, rp.recreated = ra.missing, ra.recreated
	return rp
}

// orphanArchives lists archive files no block points at: what a Compress
// interrupted after writing its archives (and before recording the call)
// leaves behind. They are harmless and kept; a later block with the same
// name replaces one.
func orphanArchives(root string, st noa.CompressionState) []string {
	known := map[string]bool{}
	for _, b := range st.Blocks {
		known[filepath.ToSlash(b.ArchiveRel)] = true
	}
	var out []string
	dirs, _ := filepath.Glob(filepath.Join(root, "tier*"))
	for _, d := range dirs {
		files, _ := os.ReadDir(d)
		for _, f := range files {
			if !f.Type().IsRegular() || strings.HasPrefix(f.Name(), ".") {
				continue
			}
			rel := filepath.Base(d) + "/" + f.Name()
			if !known[rel] {
				out = append(out, rel)
			}
		}
	}
	sort.Strings(out)
	return out
}
