/**
 * Store and runtime-settings errors: a bad store URL, a missing peer package, an unmigrated,
 * pooled or unreachable PostgreSQL, and invalid `MACHINE_*` settings.
 */
import { MachineRoutesError, type ErrorDetails } from './base.js';

/**
 * A store URL (`MACHINE_DATABASE_URL`, the config's `store`, `--database`) is none of the accepted
 * forms. `details.key` holds the URL with its password hidden, `details.accepted` the forms.
 */
export class InvalidStoreUrlException extends MachineRoutesError {
  readonly code = 'MR_INVALID_STORE_URL';
}

/**
 * An optional peer package the configuration needs is not installed (`pg` or `pg-boss` for a
 * PostgreSQL store; in `check`, also the framework, `@tanstack/query-core` for
 * `client.tanstackQuery`, the diagram renderer for `docs`): the message names it and the command
 * that installs it.
 */
export class MissingPeerDependencyException extends MachineRoutesError {
  readonly code = 'MR_MISSING_PEER_DEPENDENCY';
}

/**
 * A runtime was opened on a PostgreSQL database whose schema lacks migrations this version
 * needs (PostgreSQL is migrated once per deployment, not on open). `details.key` holds the store
 * URL with its password hidden, `details.pending` the missing versions. Run
 * `machine-routes migrate --database <url>`, or open with `migrate: true`.
 */
export class StoreNotMigratedException extends MachineRoutesError {
  readonly code = 'MR_STORE_NOT_MIGRATED';
}

/**
 * A PostgreSQL store URL reaches the server through a connection pooler that gives a client's
 * server connection to other clients between transactions (PgBouncer's `transaction` or
 * `statement` pool mode), or that refuses the `options` startup parameter a `?schema=` URL
 * sends. The store needs session state: named prepared statements, a LISTEN connection for live
 * state, and a holder connection whose backend lives exactly as long as the process (lock rows
 * name it). `details.key` holds the URL with its password hidden. Point the URL at PostgreSQL
 * itself or at a `session`-mode pool (docs/scaling.md "PgBouncer").
 */
export class StoreBehindPoolerException extends MachineRoutesError {
  readonly code = 'MR_STORE_BEHIND_POOLER';
}

/**
 * The PostgreSQL server a store URL names could not be used: not reachable, the database
 * missing, or the login refused. `details.key` holds the URL with its password hidden,
 * `details.cause` the driver's code (`3D000`, `28P01`, `ECONNREFUSED`, ...); the message says
 * what to change.
 */
export class StoreUnreachableException extends MachineRoutesError {
  readonly code = 'MR_STORE_UNREACHABLE';
}

/** One bad runtime setting, as `InvalidSettingsException` lists it. */
export interface SettingProblem {
  /** Where the value came from: an environment variable's name, or `option 'key'`. */
  source: string;
  /** The value as given (a store URL with its password hidden); absent for a name conflict. */
  value?: unknown;
  /** What is accepted instead. */
  expected: string;
  /** One line for people: source, value, what is accepted. */
  message: string;
}

/**
 * One or more runtime settings are invalid: `MACHINE_*` environment variables (see
 * runtime/environment.ts) or the options passed in code. Every bad value is listed at once in
 * `details.problems` (`SettingProblem[]`), so a deployment is fixed in one round.
 */
export class InvalidSettingsException extends MachineRoutesError {
  readonly code = 'MR_INVALID_SETTINGS';
  declare readonly details: ErrorDetails & { problems: SettingProblem[] };
}
