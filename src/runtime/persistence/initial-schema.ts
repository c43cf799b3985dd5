/**
 * The initial schema (migration 1), one SQL variant per dialect.
 *
 * Type choices:
 * - ids are ULID text; times are ISO-8601 text in SQLite (`toISOString()`, so text order is
 *   time order) and `timestamptz` in PostgreSQL;
 * - JSON columns are `json`, not `jsonb`, in PostgreSQL: `json` keeps the text as written, so a
 *   restored context has the same key order on every backend (responses stay byte-identical),
 *   and nothing queries inside these documents.
 *
 * Indexes exist for the lookups the runtime makes and no more (each one is paid on every
 * write): the instance by id, history by (instance, sequence), current states by instance and by
 * (machine, state, entered time), locks by id and expiry, children by parent and by child. The
 * original's per-column indexes on `machine_events` (type, source, machine_value, ...) serve
 * ad-hoc queries only and are left out.
 */

/** Migration 1 on SQLite. */
export const INITIAL_SCHEMA_SQLITE = `
CREATE TABLE machine_events (
  id              TEXT PRIMARY KEY,
  sequence_number INTEGER NOT NULL,
  created_at      TEXT NOT NULL,
  machine_id      TEXT NOT NULL,
  root_event_id   TEXT NOT NULL,
  source          TEXT NOT NULL CHECK (source IN ('internal', 'external')),
  type            TEXT NOT NULL,
  payload         TEXT,
  machine_value   TEXT NOT NULL,
  context         TEXT,
  version         INTEGER NOT NULL DEFAULT 1,
  actor           TEXT,
  meta            TEXT
);
-- History of one instance in order; unique so a sequence number can never be written twice.
CREATE UNIQUE INDEX machine_events_root_sequence_uq ON machine_events (root_event_id, sequence_number);

-- The last committed snapshot of every instance: restore is one primary-key read, whatever the
-- length of the history, and the sequence column fences concurrent writers.
CREATE TABLE machine_instances (
  root_event_id   TEXT PRIMARY KEY,
  machine_id      TEXT NOT NULL,
  machine_value   TEXT NOT NULL,
  context         TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('active', 'done')),
  sequence_number INTEGER NOT NULL,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL
);

CREATE TABLE machine_current_states (
  root_event_id    TEXT NOT NULL,
  machine_id       TEXT NOT NULL,
  state_id         TEXT NOT NULL,
  state_entered_at TEXT NOT NULL,
  scenario_class   TEXT,
  scenario_params  TEXT,
  PRIMARY KEY (root_event_id, state_id)
);
-- findInstancesInState: every instance of a machine in a state, oldest entry first.
CREATE INDEX machine_current_states_sweep_idx
  ON machine_current_states (machine_id, state_id, state_entered_at, root_event_id);

CREATE TABLE machine_children (
  id                   TEXT PRIMARY KEY,
  parent_root_event_id TEXT NOT NULL,
  parent_state_id      TEXT NOT NULL,
  parent_machine_id    TEXT NOT NULL,
  child_machine_id     TEXT NOT NULL,
  child_root_event_id  TEXT,
  status               TEXT NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled', 'timed_out')),
  created_at           TEXT NOT NULL,
  completed_at         TEXT
);
CREATE INDEX machine_children_parent_active_idx ON machine_children (parent_root_event_id, status);
CREATE INDEX machine_children_child_idx ON machine_children (child_root_event_id);

-- The primary key serves the original's idx_timer_lookup(root_event_id, timer_key, status).
CREATE TABLE machine_timer_fires (
  root_event_id TEXT NOT NULL,
  timer_key     TEXT NOT NULL,
  last_fired_at TEXT NOT NULL,
  fire_count    INTEGER NOT NULL DEFAULT 0,
  status        TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'fired', 'exhausted')),
  PRIMARY KEY (root_event_id, timer_key)
);

CREATE TABLE machine_locks (
  root_event_id TEXT PRIMARY KEY,
  owner_id      TEXT NOT NULL,
  acquired_at   TEXT NOT NULL,
  expires_at    TEXT NOT NULL,
  context       TEXT
);
CREATE INDEX machine_locks_expires_idx ON machine_locks (expires_at);
`;

/** Migration 1 on PostgreSQL. */
export const INITIAL_SCHEMA_POSTGRES = `
CREATE TABLE machine_events (
  id              text PRIMARY KEY,
  sequence_number integer NOT NULL,
  created_at      timestamptz NOT NULL,
  machine_id      text NOT NULL,
  root_event_id   text NOT NULL,
  source          text NOT NULL CHECK (source IN ('internal', 'external')),
  type            text NOT NULL,
  payload         json,
  machine_value   json NOT NULL,
  context         json,
  version         integer NOT NULL DEFAULT 1,
  actor           text,
  meta            json
);
CREATE UNIQUE INDEX machine_events_root_sequence_uq ON machine_events (root_event_id, sequence_number);

CREATE TABLE machine_instances (
  root_event_id   text PRIMARY KEY,
  machine_id      text NOT NULL,
  machine_value   json NOT NULL,
  context         json NOT NULL,
  status          text NOT NULL CHECK (status IN ('active', 'done')),
  sequence_number integer NOT NULL,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL
);

CREATE TABLE machine_current_states (
  root_event_id    text NOT NULL,
  machine_id       text NOT NULL,
  state_id         text NOT NULL,
  state_entered_at timestamptz NOT NULL,
  scenario_class   text,
  scenario_params  json,
  PRIMARY KEY (root_event_id, state_id)
);
CREATE INDEX machine_current_states_sweep_idx
  ON machine_current_states (machine_id, state_id, state_entered_at, root_event_id);

CREATE TABLE machine_children (
  id                   text PRIMARY KEY,
  parent_root_event_id text NOT NULL,
  parent_state_id      text NOT NULL,
  parent_machine_id    text NOT NULL,
  child_machine_id     text NOT NULL,
  child_root_event_id  text,
  status               text NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled', 'timed_out')),
  created_at           timestamptz NOT NULL,
  completed_at         timestamptz
);
CREATE INDEX machine_children_parent_active_idx ON machine_children (parent_root_event_id, status);
CREATE INDEX machine_children_child_idx ON machine_children (child_root_event_id);

CREATE TABLE machine_timer_fires (
  root_event_id text NOT NULL,
  timer_key     text NOT NULL,
  last_fired_at timestamptz NOT NULL,
  fire_count    integer NOT NULL DEFAULT 0,
  status        text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'fired', 'exhausted')),
  PRIMARY KEY (root_event_id, timer_key)
);

CREATE TABLE machine_locks (
  root_event_id text PRIMARY KEY,
  owner_id      text NOT NULL,
  acquired_at   timestamptz NOT NULL,
  expires_at    timestamptz NOT NULL,
  context       text
);
CREATE INDEX machine_locks_expires_idx ON machine_locks (expires_at);
`;
