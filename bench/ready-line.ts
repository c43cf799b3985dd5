/**
 * The benchmark servers (bench/http/server.ts, bench/reads/server.ts) print one line
 * `READY <port> [<more fields>]` once they listen: the fields of that line, or a rejection when
 * the server exits first.
 */
import type { ChildProcess } from 'node:child_process';

/** The space-separated fields after `READY` (the first is the port); `label` names the server. */
export function readyLine(child: ChildProcess, label: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const line = /READY ([^\n]*)\n/.exec(output);
      if (line) resolve(line[1]!.split(' '));
    });
    child.on('exit', (code) => reject(new Error(`${label} exited with ${code}`)));
  });
}
