/**
 * Versioning errors (docs/versioning.md): the version fence, pinned versions over HTTP, failed
 * migrations, and the blocking findings of `check --database`.
 */
import { MachineRoutesError } from './base.js';

/**
 * A persisted instance sits in a state its machine's current definition no longer has (the
 * state was removed or renamed by a deploy): HTTP 409. Migrate the instance or restore the
 * state; `machine-routes check --database <url>` lists such instances before a deploy.
 */
export class StateNotInDefinitionException extends MachineRoutesError {
  readonly code = 'MR_STATE_NOT_IN_DEFINITION';
  override readonly statusCode = 409;
}

/**
 * A machine's `migrations` are inconsistent (docs/versioning.md): a step without `from`/`to`, two
 * steps from one version, a chain that never reaches the machine's version, a state mapped to a
 * state the machine does not have.
 */
export class InvalidMigrationDefinitionException extends MachineRoutesError {
  readonly code = 'MR_INVALID_MIGRATION_DEFINITION';
}

/**
 * The version fence (docs/versioning.md): the instance was last written by a version of its
 * machine this process does not know (a newer deploy migrated it, or an unknown one wrote it), so
 * this process must not write it: HTTP 409. Like the sequence fence, it keeps old code from
 * overwriting what new code wrote; the instance is served by processes running its version.
 */
export class VersionFenceException extends MachineRoutesError {
  readonly code = 'MR_VERSION_FENCE';
  override readonly statusCode = 409;
}

/**
 * Pinned versions over HTTP (docs/versioning.md "HTTP"): the route cannot serve this instance's
 * version. An instance pinned to an older version whose machine has no endpoint for the route's
 * event (an event only newer versions take), or a route only an older pinned version has asked
 * for an instance of another version: HTTP 409, naming the instance, both versions and the route.
 * Nothing was sent.
 */
export class PinnedVersionRouteException extends MachineRoutesError {
  readonly code = 'MR_PINNED_VERSION_ROUTE';
  override readonly statusCode = 409;
}

/**
 * Migrating an instance to the machine's version failed (docs/versioning.md): its context
 * function threw, its output failed the context schema, or a state it maps to is not a state of
 * the machine. Nothing was written; HTTP 409 naming the instance and the step.
 */
export class InstanceMigrationFailedException extends MachineRoutesError {
  readonly code = 'MR_INSTANCE_MIGRATION_FAILED';
  override readonly statusCode = 409;
}

/**
 * `check --database`: live instances were last written by a version the deployed definition
 * neither runs nor migrates from (a rollback without a down migration, or a version bump without
 * a migration): their writes would be refused by the version fence (blocking).
 */
export class VersionNotCoveredException extends MachineRoutesError {
  readonly code = 'MR_VERSION_NOT_COVERED';
}

/**
 * `check --database`: the dry run of a migration over stored contexts failed (its context
 * function threw or its output failed a schema) for some instances (blocking).
 */
export class MigrationDryRunFailedException extends MachineRoutesError {
  readonly code = 'MR_MIGRATION_DRY_RUN_FAILED';
}

/**
 * `check --database` warning: children (or job actors) still run for live instances in a
 * delegating state the deploy removes, or that its migration maps to a state delegating to
 * something else: their rows are cancelled and their outcomes ignored (docs/versioning.md
 * "Delegating states").
 */
export class RunningChildrenOrphanedException extends MachineRoutesError {
  readonly code = 'MR_RUNNING_CHILDREN_ORPHANED';
}

/** `check --database`: live instances sit in a state the definitions no longer have (blocking). */
export class RemovedStateInUseException extends MachineRoutesError {
  readonly code = 'MR_REMOVED_STATE_IN_USE';
}

/** `check --database`: persisted histories hold an event type the definitions no longer know. */
export class RemovedHistoryEventException extends MachineRoutesError {
  readonly code = 'MR_REMOVED_HISTORY_EVENT';
}

/** `check --database`: stored contexts hold a key whose type the definition changed (blocking). */
export class ContextTypeChangedException extends MachineRoutesError {
  readonly code = 'MR_CONTEXT_TYPE_CHANGED';
}
