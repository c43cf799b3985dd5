/**
 * The base of every machine-routes error: `MachineRoutesError` with its stable `code`, the
 * `details` tools read, and the aggregate that reports several build-time problems at once.
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
