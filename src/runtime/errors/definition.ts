/**
 * Build-time errors of machine definitions, router and endpoint configuration, the config file
 * and `check`'s warnings: they fail `check`, `generate` or the app's start, never a request.
 */
import { MachineRoutesError } from './base.js';

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
 * A registration's `createOrSend` is invalid (docs/http.md "Create-or-send"): its `key` is not a
 * required string or number field of every listed event's payload schema, an event is not a
 * registered non-GET endpoint of the machine, or is also bound by `machineIdFor` / `modelFor`.
 * Build time (`check`, `generate`, `MachineRouter.register`).
 */
export class InvalidCreateOrSendException extends MachineRoutesError {
  readonly code = 'MR_INVALID_CREATE_OR_SEND';
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

/** A scenario names a state, event, guard, action or delegating state the machine lacks. */
export class InvalidScenarioDefinitionException extends MachineRoutesError {
  readonly code = 'MR_INVALID_SCENARIO_DEFINITION';
}

/** The configuration file (machine-routes.config.ts) is missing or malformed. */
export class InvalidConfigFileException extends MachineRoutesError {
  readonly code = 'MR_INVALID_CONFIG_FILE';
}

/**
 * A registration's `flow` declares flow control the router cannot apply: an unknown event, key
 * or key source, a limit that is not a positive integer, or a context key on a route without
 * an instance. Build time (`check`, `generate`, app start).
 */
export class InvalidFlowControlException extends MachineRoutesError {
  readonly code = 'MR_INVALID_FLOW_CONTROL';
}

/**
 * A route of the app signs or checks with a secret the environment does not give: callback
 * URLs (`callbacks`, `MACHINE_CALLBACK_SECRET`) or an inbound webhook (its `secretEnv`). The
 * app refuses to start (`MachineRouter.register` / `mount`), naming the variable.
 */
export class SigningSecretMissingException extends MachineRoutesError {
  readonly code = 'MR_SIGNING_SECRET_MISSING';
}
