-- Each kind of shared state that mcproxy keeps as one document (the JSON
-- its file holds): approvals, learned words, negotiated revisions. version
-- goes up by one at every write, so a replica can tell another's.
CREATE TABLE documents (
	name    text PRIMARY KEY,
	body    bytea NOT NULL,
	version bigint NOT NULL DEFAULT 1
);
