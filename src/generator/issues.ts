/**
 * Build-time problems as `check` reports them. Errors come from the runtime instance the config
 * was loaded with (load-config.ts), so they are recognised by shape, not by `instanceof`.
 */
import type { ErrorDetails, MachineRoutesError, SourceLocation } from '../runtime/errors.js';
import { compareCodeUnits } from './naming.js';

/** A located problem, ready to print. */
export interface Issue {
  /** Exception class name, e.g. `InvalidRouterConfigException`. */
  name: string;
  code: string;
  message: string;
  details: ErrorDetails;
  location: SourceLocation | null;
}

/** The issue of `error`, at `location`. */
export function issueAt(error: MachineRoutesError, location: SourceLocation | null): Issue {
  const { name, code, message, details } = error;
  return { name, code, message, details, location };
}

/** True for an error of the machine-routes catalogue, from whichever module instance. */
export function isMachineRoutesError(error: unknown): error is MachineRoutesError {
  if (!(error instanceof Error)) return false;
  const { code, details } = error as Error & { code?: unknown; details?: unknown };
  return (
    typeof code === 'string' &&
    code.startsWith('MR_') &&
    typeof details === 'object' &&
    details !== null
  );
}

/** Every single problem inside `error` (an aggregate's `.issues`, or the error itself). */
export function flattenIssues(error: MachineRoutesError): MachineRoutesError[] {
  const nested = (error as { issues?: unknown }).issues;
  return Array.isArray(nested)
    ? nested.filter(isMachineRoutesError).flatMap(flattenIssues)
    : [error];
}

/** Sorts issues by file, line, column, then code and message (unlocated ones last). */
export function sortIssues(issues: readonly Issue[]): Issue[] {
  const key = (issue: Issue): [string, number, number] =>
    issue.location === null
      ? ['\uffff', 0, 0]
      : [issue.location.file, issue.location.line, issue.location.column];
  return [...issues].sort((a, b) => {
    const [fileA, lineA, colA] = key(a);
    const [fileB, lineB, colB] = key(b);
    return (
      compareCodeUnits(fileA, fileB) ||
      lineA - lineB ||
      colA - colB ||
      compareCodeUnits(a.code, b.code) ||
      compareCodeUnits(a.message, b.message)
    );
  });
}

/** `<file>:<line>:<col> <ExceptionName> [<code>] <message>`; the place is omitted when unknown. */
export function formatIssue(issue: Issue): string {
  const place =
    issue.location === null
      ? ''
      : `${issue.location.file}:${issue.location.line}:${issue.location.column} `;
  return `${place}${issue.name} [${issue.code}] ${issue.message}`;
}
