/**
 * Runs the CLI in-process and captures what it prints (shared by the CLI suites).
 */
import { runCli } from '../../src/cli/main.js';
import { ROOT } from '../generator/support.js';

/** One command line's exit code and output. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `argv` in `cwd` (default: the repository root). */
export async function run(argv: string[], cwd = ROOT): Promise<CliRun> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await runCli(argv, {
    cwd,
    stdout: (text) => stdout.push(text),
    stderr: (text) => stderr.push(text),
  });
  return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
}
