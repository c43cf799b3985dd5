/**
 * TypeScript fixtures run as real OS processes (`node --import tsx <script>`), with line-based
 * handshakes over stdout.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';

/** A running fixture process. */
export interface FixtureProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** Resolves with the first stdout line matching `predicate` (rejects if the process exits first). */
  waitForLine(predicate: (line: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit code (or signal name) once the process ends. */
  readonly exited: Promise<number | string>;
  /** Everything written to stderr so far (for failure messages). */
  stderr(): string;
}

/** The URL a server fixture prints as `LISTENING <url>` once it accepts requests. */
export async function listeningUrl(server: FixtureProcess, timeoutMs = 45_000): Promise<string> {
  const line = await server.waitForLine((text) => text.startsWith('LISTENING '), timeoutMs);
  return line.slice('LISTENING '.length);
}

/** Starts `node --import tsx <script> ...args` on this repository's sources. */
export function startFixture(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): FixtureProcess {
  return startNode(['--conditions=machine-routes-source', '--import', 'tsx', script, ...args], {
    env,
    name: script,
  });
}

/**
 * Starts plain `node <args>` (no loader), e.g. on a compiled script, in `cwd`; `node` names
 * another Node executable than the one running the tests.
 */
export function startNode(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; name?: string; node?: string } = {},
): FixtureProcess {
  const script = options.name ?? args.join(' ');
  const child = spawn(options.node ?? process.execPath, args, {
    env: { ...process.env, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    for (const wake of waiters) wake();
  });
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => {
      resolve(code ?? signal ?? 'unknown');
      for (const wake of waiters) wake();
    });
  });
  let done = false;
  void exited.then(() => {
    done = true;
  });

  return {
    child,
    exited,
    stderr: () => stderr,
    waitForLine(predicate, timeoutMs = 15_000) {
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(`No matching line from ${script} within ${timeoutMs} ms. stderr:\n${stderr}`),
          );
        }, timeoutMs);
        const check = () => {
          const line = lines.find(predicate);
          if (line !== undefined || done) {
            clearTimeout(timer);
            waiters.delete(check);
            if (line !== undefined) resolve(line);
            else
              reject(
                new Error(`${script} exited before printing the expected line. stderr:\n${stderr}`),
              );
          }
        };
        waiters.add(check);
        check();
      });
    },
  };
}
