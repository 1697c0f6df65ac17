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
// The behaviour follows ../shared/seeds/noa-package.txt; comments citing
// "spec" refer to that document.
package noa
