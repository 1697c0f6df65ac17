// Package session is the host side of noa: one Host per session, whether
// the session is an MCP client's (internal/server records every tools/call
// and its result) or a model conversation's (the gateway records the
// messages of each model request). It speaks noa's types and its own and
// knows nothing of MCP: how a front's traffic becomes messages, and how
// noa's answers are shown to a client, is the front's business.
//
// A front records messages of any role (Record), runs noa over the session
// (Turn: the projected view, the nudge, refs and frozen token counts; Peek:
// what Turn would give for pending messages, recording nothing),
// applies the model's Compress calls through an on-disk Archiver
// (Compress) and answers read_archive with archived originals, verbatim
// and paged (ReadArchive). A message recorded with CutToSize that is above
// the configured size is archived and kept head-and-tail, with a pointer
// to read_archive. noa runs incrementally (one noa.Engine per host, built
// at Open), so a turn's cost does not grow with the session. Every host
// shares the Manager's Options except what HostOptions sets for it: the
// gateway opens each conversation with its model's window and emergency
// truncation on (Manager.HostWith), and only a session it created
// (HostOptions.OnlyOwn: never an MCP client's). A front that adds noa's
// tools and text only once a conversation is long enough marks that point
// with Engage, recorded in the transcript, so it holds across restarts.
//
// Everything a session knows lives under <data_dir>/sessions/<session-id>/:
//
//	transcript.jsonl   append-only, one record per message (and per turn
//	                   that recorded none but moved noa's pacing, and one
//	                   for Engage), written
//	                   before the front sees the answer and fsync'd before
//	                   it too (calls finishing together share one fsync,
//	                   run outside the lock the session's other calls wait
//	                   on), or within Options.FlushEvery when it is set
//	                   (noa.fsync "every_second", the configuration's
//	                   default)
//	state.json         the noa state, replaced atomically after each change
//	archive/tier<N>/   one markdown file per block (noa.RenderArchive)
//	archive/results/   originals of texts that were cut for size
//	lock               flock'd by the one process writing the session (Open
//	                   until Close, Rebuild); holds that process's pid
//
// The transcript is the source of truth: the state is rebuilt from it alone
// (noa.RebuildStateFromLog plus the pacing recorded with each turn), and Open
// checks that the rebuilt state equals state.json, repairing a missing or
// stale state.json from it. Writes happen in the order archives → transcript
// → state, so a crash at any point leaves either an applied compression or
// none, never a block without its archive. Every write goes through FS, so
// tests can fail any one of them.
//
// A write that fails leaves nothing half-written and nothing counted that
// is not recorded; its error is ErrNotRecorded, and the host's Recording
// (a Manager's Failing) shows the failure until a write succeeds again, so
// the front can tell the client or refuse the call (issue 26).
//
// With Options.Store (issue 32: replicas sharing PostgreSQL, store.go) the
// directory is this process's working copy: every write above is also made
// to the store, in the same order and before the answer, and a Manager
// brings the copy up to the store before it hands out a host. Without one
// (the default) the directory is the only copy.
//
// This package does the I/O that noa must not: files, the clock and logging.
// It never deletes or rewrites an archive or a transcript record (a record
// whose write failed is cut off again, and the originals of a record never
// written are removed), except that whole sessions nothing has touched for
// Options.Retention are removed (Prune; a Manager runs it at start and
// daily, never on an open session). The `mcproxy sessions` command reads
// sessions through List, Inspect, ReadOriginal and Rebuild, prunes them
// through Prune, and formats what they return.
//
// Its size (about 5,250 lines, over the project's guide of 3,000 for one
// package) is one concern, noa's host: recording, turns, Compress and
// read_archive, size cuts, checkpoints, locks, retention and the CLI's
// reads all act on one session's files under the host's lock, in the write
// order above that keeps a crash consistent. Split, each part would need
// the host's lock and its unexported file layout from outside.
package session
