// Package session is the host side of noa: one Host per MCP client session.
//
// A Host records the session's message stream (every tools/call mcproxy
// receives becomes a tool-call CoreMessage, every result it returns a
// tool-result CoreMessage), runs noa.ProcessTurn on each call, and shapes what
// goes back to the client: a ref tag naming the result, the nudge when noa
// asks the model to compress, and a head-and-tail cut of any result above the
// configured size with a pointer to the archived original. It applies the
// model's Compress calls through an on-disk Archiver and answers read_archive
// with archived originals, verbatim and paged.
//
// Everything a session knows lives under <data_dir>/sessions/<session-id>/:
//
//	transcript.jsonl   append-only, one record per message and per Compress
//	                   call, fsync'd before the client sees the answer
//	state.json         the noa state, replaced atomically after each change
//	archive/tier<N>/   one markdown file per block (noa.RenderArchive)
//	archive/results/   originals of results that were cut for size
//	lock               flock'd by the one process writing the session (Open
//	                   until Close, Rebuild); holds that process's pid
//
// The transcript is the source of truth: the state is rebuilt from it alone
// (noa.RebuildStateFromLog plus the pacing recorded with each turn), and Open
// checks that the rebuilt state equals state.json, repairing a missing or
// stale state.json from it. Writes happen in the order archives → transcript
// → state, so a crash at any point leaves either an applied compression or
// none, never a block without its archive.
//
// This package does the I/O that noa must not: files, the clock and logging.
// It never deletes or rewrites an archive or a transcript record.
package session
