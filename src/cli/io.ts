/**
 * Where commands read and write: the process in the real CLI, buffers in tests.
 */
import path from 'node:path';
import type { Issue } from '../generator/issues.js';
import { formatIssue } from '../generator/issues.js';

/** The outside world of one CLI run. */
export interface CliIo {
  cwd: string;
  stdout(text: string): void;
  stderr(text: string): void;
  /** Ends long-running commands (`generate --watch`) besides SIGINT/SIGTERM; for tests. */
  signal?: AbortSignal;
}

/** The process's own streams and working directory. */
export const processIo: CliIo = {
  cwd: process.cwd(),
  stdout: (text) => process.stdout.write(`${text}\n`),
  stderr: (text) => process.stderr.write(`${text}\n`),
};

/** An issue with its file shown relative to the working directory (what a terminal links). */
export function relativeIssue(issue: Issue, cwd: string): Issue {
  if (issue.location === null) return issue;
  const file = path.relative(cwd, issue.location.file).split(path.sep).join('/');
  return { ...issue, location: { ...issue.location, file } };
}

/** Prints every issue, one per line, and a count. */
export function printIssues(io: CliIo, issues: readonly Issue[]): void {
  for (const issue of issues) io.stdout(formatIssue(relativeIssue(issue, io.cwd)));
  printProblemCount(io, issues.length);
}

/** `N problems found.` on stderr. */
export function printProblemCount(io: CliIo, count: number): void {
  io.stderr(`${count} problem${count === 1 ? '' : 's'} found.`);
}
