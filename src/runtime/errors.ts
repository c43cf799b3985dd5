/**
 * Every named exception of the specification, each with a stable `code`.
 *
 * Codes never change once released: tools and tests match on `code` (or `instanceof`), never on
 * message text. `statusCode` is the HTTP status the endpoint layer answers with when the error
 * escapes a request; build-time errors keep 500 because they never should reach a request.
 */

/** Where a problem sits in the user's source, when it can be found. */
export interface SourceLocation {
  file: string;
  line: number;
  column: number;
}

/** Structured facts about an error, for tools (`check --format json`) and logs. */
export interface ErrorDetails {
  /** Machine definition id the problem belongs to. */
  machine?: string;
  /** Dotted state path, or the config key path, that is at fault. */
  path?: string;
  /** The offending key or value. */
  key?: string;
  /** Registration name or prefix, for router errors. */
  registration?: string;
  location?: SourceLocation;
  [extra: string]: unknown;
}

/** Base class of every machine-routes error. */
export abstract class MachineRoutesError extends Error {
  /** Stable, machine-readable identifier, `MR_` + upper snake case. */
  abstract readonly code: string;
  /** HTTP status used when this error answers a request. */
  readonly statusCode: number = 500;
  readonly details: ErrorDetails;

  constructor(message: string, details: ErrorDetails = {}) {
    super(message);
    this.name = new.target.name;
    this.details = details;
  }
}

/**
 * A request carries an `Idempotency-Key` whose first request, with the same key on the same
 * route and instance, is still being processed (HTTP 409). Retry once it has answered.
 */
export class IdempotencyKeyInFlightException extends MachineRoutesError {
  readonly code = 'MR_IDEMPOTENCY_KEY_IN_FLIGHT';
  override readonly statusCode = 409;
}

/**
 * An `Idempotency-Key` was reused with a different request body (or query) on the same route
 * and instance (HTTP 422): a key names one request; use a new key for a new request.
 */
export class IdempotencyKeyReusedException extends MachineRoutesError {
  readonly code = 'MR_IDEMPOTENCY_KEY_REUSED';
  override readonly statusCode = 422;
}

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

/**
 * `check` warning: a stateless route (its event in neither `machineIdFor` nor `modelFor`) whose
 * event the machine's initial state does not accept, so that every request fails. Bind the
 * event to an instance, or accept it in the initial state.
 */
export class RouteNeverSucceedsException extends MachineRoutesError {
  readonly code = 'MR_ROUTE_NEVER_SUCCEEDS';
}

/**
 * `check` warning: an event some state handles that no route, timer, schedule or forward sends.
 * List it in the machine's endpoints, or remove its transitions.
 */
export class EventNeverSentException extends MachineRoutesError {
  readonly code = 'MR_EVENT_NEVER_SENT';
}

/** `check` warning: a state no path of transitions from the initial state enters. */
export class UnreachableStateException extends MachineRoutesError {
  readonly code = 'MR_UNREACHABLE_STATE';
}

/** Router registration options violate the rules of the spec ("Filtering and validation" rule 5). */
export class InvalidRouterConfigException extends MachineRoutesError {
  readonly code = 'MR_INVALID_ROUTER_CONFIG';
}

/**
 * The admin route group (config `admin`, `mountAdminRoutes`) names no middleware: its routes
 * read every instance and repair them, so it is refused unless the application protects it.
 * Build time (`check`, `generate`, app start).
 */
export class AdminMiddlewareRequiredException extends MachineRoutesError {
  readonly code = 'MR_ADMIN_MIDDLEWARE_REQUIRED';
}

/** An `endpoints` entry or a forward entry is invalid ("Filtering and validation" rule 6). */
export class InvalidEndpointDefinitionException extends MachineRoutesError {
  readonly code = 'MR_INVALID_ENDPOINT_DEFINITION';
}

/** `output` on a transient state or on a state inside a parallel region. */
export class InvalidOutputDefinitionException extends MachineRoutesError {
  readonly code = 'MR_INVALID_OUTPUT_DEFINITION';
}

/** A forwarded output behavior requires a typed child output that the child does not define. */
export class MachineOutputInjectionException extends MachineRoutesError {
  readonly code = 'MR_MACHINE_OUTPUT_INJECTION';
}

/** A behavior key matches neither a direct reference nor an entry of the behavior registry. */
export class BehaviorNotFoundException extends MachineRoutesError {
  readonly code = 'MR_BEHAVIOR_NOT_FOUND';
}

/** A state configuration is invalid (unknown type or key, final state with transitions, ...). */
export class InvalidStateConfigException extends MachineRoutesError {
  readonly code = 'MR_INVALID_STATE_CONFIG';
}

/** A transition targets a state that does not exist. */
export class UndefinedTargetStateException extends MachineRoutesError {
  readonly code = 'MR_UNDEFINED_TARGET_STATE';
}

/** An event type is malformed or uses a reserved `@` name where it is not allowed. */
export class InvalidEventDefinitionException extends MachineRoutesError {
  readonly code = 'MR_INVALID_EVENT_DEFINITION';
}

/** A behavior reference or parameterized tuple is malformed. */
export class InvalidBehaviorDefinitionException extends MachineRoutesError {
  readonly code = 'MR_INVALID_BEHAVIOR_DEFINITION';
}

/** An `after` / `every` timer is malformed (non-positive, not a duration, ...). */
export class InvalidTimerDefinitionException extends MachineRoutesError {
  readonly code = 'MR_INVALID_TIMER_DEFINITION';
}

/**
 * A machine has timed transitions (`after` / `every`) but no timer registration: since 9.3.0
 * timers fire only for machines registered explicitly (the config's `timers`).
 */
export class TimersNotRegisteredException extends MachineRoutesError {
  readonly code = 'MR_TIMERS_NOT_REGISTERED';
}

/**
 * The API reference page (config `docs`) cannot be served: a file it needs is missing from the
 * installed package. Thrown at start, naming the file and what to do.
 */
export class ApiReferenceUnavailableException extends MachineRoutesError {
  readonly code = 'MR_API_REFERENCE_UNAVAILABLE';
}

/** A scheduled (cron) event is malformed: bad expression, unknown event or state, duplicate name. */
export class InvalidScheduleDefinitionException extends MachineRoutesError {
  readonly code = 'MR_INVALID_SCHEDULE_DEFINITION';
}

/** `sendToParent` / `dispatchToParent` called by a machine that has no parent. */
export class NoParentMachineException extends MachineRoutesError {
  readonly code = 'MR_NO_PARENT_MACHINE';
}

/**
 * A typed child input cannot be resolved from the parent context: the parent's `input` names a
 * key its context lacks, or the mapped input fails the child's input schema. At run time the
 * values come from the requests that built the parent's context: 422 when it escapes one
 * (docs/delegation.md, "Typed contracts").
 */
export class MachineInputValidationException extends MachineRoutesError {
  readonly code = 'MR_MACHINE_INPUT_VALIDATION';
  override readonly statusCode = 422;
}

/** A typed output cannot be built from the context (422 when it escapes a request). */
export class MachineOutputResolutionException extends MachineRoutesError {
  readonly code = 'MR_MACHINE_OUTPUT_RESOLUTION';
  override readonly statusCode = 422;
}

/** A typed failure cannot be built from a failed child's error (422 when it escapes a request). */
export class MachineFailureResolutionException extends MachineRoutesError {
  readonly code = 'MR_MACHINE_FAILURE_RESOLUTION';
  override readonly statusCode = 422;
}

/** Field errors keyed by field path (`payload.amount`), each with one or more messages. */
export type FieldErrors = Record<string, string[]>;

/** Request or validation-guard validation failed: answered with 422 `{ message, errors }`. */
export class MachineValidationException extends MachineRoutesError {
  readonly code = 'MR_VALIDATION_FAILED';
  override readonly statusCode = 422;
  readonly errors: FieldErrors;

  constructor(message: string, errors: FieldErrors, details: ErrorDetails = {}) {
    super(message, details);
    this.errors = errors;
  }
}

/**
 * The instance lock is held by someone else. The endpoint layer answers 423 (GET: 200) with
 * the last committed state carried here; 409 is the status of the exception-table entry and of
 * callers outside the endpoint layer.
 */
export class MachineAlreadyRunningException extends MachineRoutesError {
  readonly code = 'MR_MACHINE_ALREADY_RUNNING';
  override readonly statusCode = 409;
  /** Last committed snapshot of the instance, when it could be read. */
  readonly snapshot: unknown;

  constructor(message: string, snapshot: unknown, details: ErrorDetails = {}) {
    super(message, details);
    this.snapshot = snapshot;
  }
}

/** No transition of the current state (or its ancestors) accepts the event. */
export class NoTransitionDefinitionFoundException extends MachineRoutesError {
  readonly code = 'MR_NO_TRANSITION';
  override readonly statusCode = 409;
}

/** Processing one event exceeded `max_transition_depth` (an `@always` or raise loop). */
export class MaxTransitionDepthExceededException extends MachineRoutesError {
  readonly code = 'MR_MAX_TRANSITION_DEPTH_EXCEEDED';
}

/**
 * A timer fire's event made a behavior throw (`cause`): the fire is tried again after
 * `MACHINE_TIMER_BACKOFF`, or, its `MACHINE_TIMER_TRIES` used up (`details.givenUp`), given up
 * with a TRANSITION_FAIL record. Reported to the timer sweep's error handler (the log), never to
 * a request.
 */
export class TimerFireFailedException extends MachineRoutesError {
  readonly code = 'MR_TIMER_FIRE_FAILED';

  constructor(message: string, details: ErrorDetails, cause: unknown) {
    super(message, details);
    this.cause = cause;
  }
}

/** An instance id is unknown, or belongs to another machine definition. */
export class MachineNotFoundException extends MachineRoutesError {
  readonly code = 'MR_MACHINE_NOT_FOUND';
  override readonly statusCode = 404;
}

/**
 * An operator's query (docs/operations.md) names something the machine does not have, or a
 * cursor that is not one of this list's: the message names the machine, the key and what to
 * send instead.
 */
export class InvalidOperationQueryException extends MachineRoutesError {
  readonly code = 'MR_INVALID_OPERATION_QUERY';
  override readonly statusCode = 400;
}

/**
 * An operator paused the instance (docs/operations.md "Pause and resume"): it refuses events
 * until resumed. 409, not the lock's 423: waiting does not help, an operator must resume it.
 */
export class InstancePausedException extends MachineRoutesError {
  readonly code = 'MR_INSTANCE_PAUSED';
  override readonly statusCode = 409;
}

/**
 * A send's precondition refused the instance as it is now (HTTP `If-Match` naming a version the
 * instance has moved on from): HTTP 412, nothing written. `snapshot` is the last committed state
 * the precondition saw, so the answer can name the current version.
 */
export class PreconditionFailedException extends MachineRoutesError {
  readonly code = 'MR_PRECONDITION_FAILED';
  override readonly statusCode = 412;
  /** The instance's last committed snapshot, as the precondition saw it. */
  readonly snapshot: unknown;

  constructor(message: string, snapshot: unknown, details: ErrorDetails = {}) {
    super(message, details);
    this.snapshot = snapshot;
  }
}

/** The runtime was closed (shutting down): it serves no more requests. */
export class RuntimeClosedException extends MachineRoutesError {
  readonly code = 'MR_RUNTIME_CLOSED';
  override readonly statusCode = 503;
}

/** A forwarded event found no running child, or the child does not accept it. */
export class ForwardTargetUnavailableException extends MachineRoutesError {
  readonly code = 'MR_FORWARD_TARGET_UNAVAILABLE';
  override readonly statusCode = 409;
}

/** A scenario names a state, event, guard, action or delegating state the machine lacks. */
export class InvalidScenarioDefinitionException extends MachineRoutesError {
  readonly code = 'MR_INVALID_SCENARIO_DEFINITION';
}

/** A request names a scenario slug the machine does not define: 404 `{ message }`. */
export class ScenarioNotFoundException extends MachineRoutesError {
  readonly code = 'MR_SCENARIO_NOT_FOUND';
  override readonly statusCode = 404;
}

/**
 * A scenario cannot play here: the machine is not in its source state, the request sends
 * another event, or its `scenarioParams` are invalid. 422 `{ message }`; nothing is written.
 */
export class ScenarioFailedException extends MachineRoutesError {
  readonly code = 'MR_SCENARIO_FAILED';
  override readonly statusCode = 422;
}

/** The configuration file (machine-routes.config.ts) is missing or malformed. */
export class InvalidConfigFileException extends MachineRoutesError {
  readonly code = 'MR_INVALID_CONFIG_FILE';
}

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

/** Several build-time problems, collected before failing once. */
export class AggregateMachineRoutesError extends MachineRoutesError {
  readonly code = 'MR_AGGREGATE';
  readonly issues: MachineRoutesError[];

  constructor(issues: MachineRoutesError[]) {
    super(
      `${issues.length} problem${issues.length === 1 ? '' : 's'} found:\n` +
        issues.map((issue) => `  ${issue.name} [${issue.code}] ${issue.message}`).join('\n'),
    );
    this.issues = issues;
  }
}

/**
 * Throws one error for a list of collected problems: the single problem itself when there is
 * one (so callers can match `instanceof` directly), an aggregate carrying `.issues` otherwise.
 */
export function throwIfAny(issues: MachineRoutesError[]): void {
  if (issues.length === 1) throw issues[0];
  if (issues.length > 1) throw new AggregateMachineRoutesError(issues);
}
