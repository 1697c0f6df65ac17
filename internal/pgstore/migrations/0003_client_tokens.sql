-- Client tokens (issue 31, shared by issue 32): what clienttoken.File keeps
-- in tokens.json. Only the token's SHA-256 is stored, never its value.
CREATE TABLE client_tokens (
	hash     text PRIMARY KEY,
	name     text NOT NULL UNIQUE,
	profiles text[] NOT NULL,
	created  timestamptz NOT NULL,
	expires  timestamptz
);
