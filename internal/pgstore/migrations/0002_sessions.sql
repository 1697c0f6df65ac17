-- Sessions (issue 32 stage 2): what internal/session keeps in a session's
-- directory. head is the seq of the last record, and every append checks
-- it, so two writers never fork a transcript; updated is the last write,
-- for retention.
CREATE TABLE sessions (
	id        text PRIMARY KEY,
	head      bigint NOT NULL DEFAULT 0,
	state     bytea,
	state_seq bigint NOT NULL DEFAULT 0,
	updated   timestamptz NOT NULL DEFAULT now()
);

-- transcript.jsonl, one row per record (its JSON line).
CREATE TABLE session_records (
	session text   NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	seq     bigint NOT NULL,
	line    bytea  NOT NULL,
	PRIMARY KEY (session, seq)
);

-- The session's other files: archives (archive/tier<N>/..., archive/results/...),
-- noa.json, session.json.
CREATE TABLE session_files (
	session text  NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	rel     text  NOT NULL,
	body    bytea NOT NULL,
	PRIMARY KEY (session, rel)
);

-- The gateway's conversation index: a conversation (a session) of a scope
-- (the credential's hash and the session header's name) is known by the
-- id of the last part it holds. It goes with its session.
CREATE TABLE gateway_conversations (
	conv text PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	cred text NOT NULL,
	name text NOT NULL,
	last text NOT NULL
);
CREATE INDEX gateway_conversations_last ON gateway_conversations (cred, name, last);
