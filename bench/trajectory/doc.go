// Package trajectory owns the replayable agent runs that `mcproxy bench
// gateway` measures compression on (issue 27): public coding-agent
// trajectories on SWE-bench-style tasks, one gzip-compressed JSON file per
// run. The runs are in the repository, in DefaultDir (bench/trajectory/runs),
// with their licences, and compiled into the binary; SOURCES.md in this
// directory names each run's repository, commit, path, agent, model and
// licence, and how it was converted. Open reads the runs from Options.Dir,
// else $MCPROXY_TRAJECTORIES, else the built-in copy. The tests of the
// replay use the synthetic runs in testdata; TestBuiltInRuns checks the
// committed ones against SOURCES.md.
//
// It loads them (Store.Load, Store.LoadAll), checks that each is a
// conversation a provider would accept, and renders, for step k, the exact
// request a client would send before the agent's k-th assistant turn: an
// Anthropic Messages request (Anthropic) or an OpenAI Chat Completions
// request (OpenAI). Every message is rendered from the step it came from
// alone, and tool-call ids are derived from the trajectory id and the step,
// so the request for step k+1 starts with the bytes of the request for step
// k up to the end of its last message: the prefix a provider's cache sees.
// Session joins several runs into one long conversation, each task's first
// user message following the previous task's end.
//
// Facts lists the later-needed facts of a run. A fact is a token that the
// agent first saw in a tool result and used verbatim in a later tool call's
// arguments. The rule, applied to every step j's call arguments:
//   - a token is a maximal run of letters, digits and "_./:-" that starts with
//     a letter or "_", is at least MinFactLen bytes long, and looks like a path
//     or a code name: it holds "/", "." or "_", or a lower-case letter followed
//     by an upper-case one (fooBar);
//   - Seen is the first step whose tool results contain the token, and the
//     token must appear nowhere before that result: not in the system prompt,
//     the task message, any earlier result or any assistant text or arguments
//     up to and including step Seen;
//   - Needed is the first step whose call arguments contain the token, even
//     inside a longer token (a path that holds it), and it must be at least
//     MinFactGap steps after Seen. The agent learnt the token from that old
//     tool result, the part of the history a compressor removes first, and
//     no call of its own repeated it in the meantime.
//
// Each token gives at most one fact; facts are ordered by Needed, then Seen,
// then text, so the list is the same on every run.
//
// Import converts a run from the record its agent wrote (a mini-swe-agent
// trajectory, 1.x with fenced bash blocks or 2.x with tool calls, or one
// record of an OpenHands output.jsonl) into a Trajectory, moving pieces
// into place without changing any text, command or output, and validates
// it; Store.Write stores it and reads it back. SOURCES.md, "How each run
// was converted", is the account of each format; `mcproxy bench import`
// is the command.
//
// The package reads and writes nothing but the directory Open resolves and
// the bytes Import is given, and has no production behaviour; only bench
// code and `mcproxy bench` import it.
package trajectory
