-- MCP client sessions (streamable HTTP) that every replica may continue
-- (issue 32): the owner (an identity's label, never a credential) and the
-- client's initialize request, replayed by a replica that did not issue
-- the id; last_seen, moved at most every tenth of the idle timeout, ends
-- the session for all replicas once it is older than the timeout;
-- log_level is the client's last logging/setLevel ('' for none).
CREATE TABLE client_sessions (
	id         text PRIMARY KEY,
	owner      text NOT NULL,
	initialize bytea NOT NULL,
	log_level  text NOT NULL DEFAULT '',
	last_seen  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX client_sessions_last_seen ON client_sessions (last_seen);
