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
// "spec" refer to that document. Issue 27 changed four behaviours, keeping
// the spec's names:
//   - a nudge names at most MaxRecommendedRanges large ranges, merged
//     across everything but the soft zone and summaries, for one Compress
//     call (each call rewrites the provider's prompt cache), and stays
//     under NudgeMaxTokens; the rules it carried are resident in
//     BuildSystemPrompt;
//   - the first user message, the task, is soft-protected: never in a
//     recommended range, and a Compress range holding it is refused;
//   - emergency truncation cuts whatever makes the view too large (text as
//     well as tool results, in the recent zone when nothing else frees
//     enough, the task only when it alone exceeds the window) until the view
//     with its overhead fits the window, and each cut names the
//     read_archive call that returns its bytes;
//   - Recommendation.ReclaimableTokens carries what the pacing weighs, now
//     that the ranges listed are fewer than the viable ones.
//
// Its size (about 6,300 lines, over the project's guide of 3,000 for one
// package) is deliberate: the spec defines noa as one package with one
// exported surface, and its parts (refs, pacing, ranges, Compress parsing,
// tiers, truncation, rendering) share unexported state types that a split
// would have to export, widening what hosts can reach into. Each file holds
// one of those parts.
package noa
