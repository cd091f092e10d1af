-- {{schema}} is replaced by the quoted schema name (WithSchema).

-- The last place handed out in each session; its row lock serialises the
-- first appends of new runs, so places follow commit order.
CREATE TABLE {{schema}}.session_heads (
	session_id text   NOT NULL PRIMARY KEY,
	last_place bigint NOT NULL
);

-- A run's place in its session, fixed at its first append.
CREATE TABLE {{schema}}.session_runs (
	session_id text   NOT NULL,
	run_id     text   NOT NULL,
	place      bigint NOT NULL,
	PRIMARY KEY (session_id, run_id)
);

-- Items, ordered by (place, seq); raw is the canonical Responses-API JSON,
-- kept byte for byte (bytea, not jsonb).
CREATE TABLE {{schema}}.session_items (
	session_id text   NOT NULL,
	place      bigint NOT NULL,
	seq        bigint NOT NULL,
	kind       text   NOT NULL,
	name       text   NOT NULL,
	raw        bytea  NOT NULL,
	PRIMARY KEY (session_id, place, seq)
);

-- Checkpoints of runs (state.Store), compare-and-swap on version.
CREATE TABLE {{schema}}.run_checkpoints (
	run_id  text   NOT NULL PRIMARY KEY,
	version bigint NOT NULL,
	data    bytea  NOT NULL
);
