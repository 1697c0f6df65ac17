// Package noa is mcproxy's model-driven context-compression engine.
//
// The summaries come from the model; noa supplies everything around them. It
// gives messages stable refs, chooses when a compression request is due and
// which spans are allowed, applies the model's Compress call (archiving the originals
// through a host-supplied Archiver first), tracks blocks across three tiers,
// prunes what blocks cover, and renders every text the model reads.
//
// The package is pure: it imports only the standard library and performs no
// I/O, reads no clock, logs nothing and never calls a model. Hosts (see
// internal/session) supply token counters, timestamps and storage. Every
// function treats its inputs as read-only; results are fresh values.
//
// ProcessTurn computes a turn from the whole history, so its cost grows with
// the session. Engine is the same computation kept between calls: a host
// appends each message once and a turn costs what the new messages and the
// recent zone cost (see Engine for the calls that still cost O(n), and for
// the views it shares instead of copying). ProcessTurn stays the reference
// the Engine is tested against.
//
// The behaviour follows the project's noa specification (seeds/noa-package.txt,
// kept beside the repository, not in it); comments citing
// "spec" refer to that document.
package noa
