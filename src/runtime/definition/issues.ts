/**
 * Collects definition problems of one machine so defineMachine can report all of them at once.
 */
import type { MachineRoutesError, ErrorDetails, SourceLocation } from '../errors.js';

type ErrorClass = new (message: string, details?: ErrorDetails) => MachineRoutesError;

/** Where in a machine config a problem sits. */
export interface IssueLocation {
  /** Dotted state path (`checkout.payment`), `''` for the root. */
  path: string;
  /** The offending key or value. */
  key: string;
}

/** The problems found while defining one machine, each naming machine, path and key. */
export class IssueCollector {
  readonly issues: MachineRoutesError[] = [];

  constructor(
    readonly machineId: string,
    private readonly location: SourceLocation | undefined,
  ) {}

  /**
   * Records one problem. `problem` says what is wrong, `fix` what to change; the message is
   * prefixed with the machine and the state path so it reads on its own in `check` output.
   */
  add(errorClass: ErrorClass, where: IssueLocation, problem: string, fix?: string): void {
    const place = where.path === '' ? 'root state' : `state '${where.path}'`;
    const message = `Machine '${this.machineId}', ${place}: ${problem}${fix === undefined ? '' : ` ${fix}`}`;
    const details: ErrorDetails = { machine: this.machineId, path: where.path, key: where.key };
    if (this.location !== undefined) details.location = this.location;
    this.issues.push(new errorClass(message, details));
  }

  /** Adopts problems found by another module (endpoint normalization), keeping their messages. */
  merge(issues: readonly MachineRoutesError[]): void {
    for (const issue of issues) {
      if (issue.details.machine === undefined) issue.details.machine = this.machineId;
      if (issue.details.location === undefined && this.location !== undefined)
        issue.details.location = this.location;
      this.issues.push(issue);
    }
  }
}

/** `a.b` joined, `''` at the root. */
export function childPath(parent: string, key: string): string {
  return parent === '' ? key : `${parent}.${key}`;
}
