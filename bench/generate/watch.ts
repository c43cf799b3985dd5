/**
 * `generate --watch` after a one-machine change: `npx tsx bench/generate/watch.ts [--edits 9]`.
 *
 * Copies the example config and machines to a temporary folder inside the repository (so they
 * resolve zod and machine-routes as a project would), starts `machine-routes generate --watch`
 * there from the built CLI, then edits one machine file (a state's description) EDITS times,
 * 400 ms apart, and times each write to the CLI's `Wrote` line. The watcher batches changes for
 * 50 ms before it regenerates; that wait is subtracted. Prints every time and the median
 * (goal: under 300 ms).
 */
import { spawn } from 'node:child_process';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BATCH_MS = 50;
const editsFlag = process.argv.indexOf('--edits');
const EDITS = editsFlag === -1 ? 9 : Number(process.argv[editsFlag + 1]);

const dir = path.join(ROOT, `bench/results/watch-${process.pid}`);
cpSync(path.join(ROOT, 'fixtures/example'), dir, { recursive: true });
const config = path.join(dir, 'machine-routes.config.ts');
writeFileSync(
  config,
  readFileSync(config, 'utf8').replace("dir: '../../generated-example'", "dir: 'out'"),
);
const startLoad = loadavg()[0]!;
const child = spawn(
  process.execPath,
  [path.join(ROOT, 'bin/machine-routes.js'), 'generate', '--watch'],
  { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] },
);
try {
  const lines = createInterface({ input: child.stdout! });
  let waiter: ((line: string) => void) | undefined;
  lines.on('line', (line) => {
    if (line.startsWith('Wrote') && waiter) {
      const wake = waiter;
      waiter = undefined;
      wake(line);
    }
  });
  await new Promise<void>((resolve) =>
    lines.on('line', (line) => line.startsWith('Watching') && resolve()),
  );
  const machine = path.join(dir, 'machines/order.ts');
  const original = readFileSync(machine, 'utf8');
  const times: number[] = [];
  for (let edit = 0; edit < EDITS; edit += 1) {
    await new Promise((resolve) => setTimeout(resolve, 400));
    const wrote = new Promise<string>((resolve) => (waiter = resolve));
    const started = performance.now();
    writeFileSync(
      machine,
      original.replace('Created, not submitted yet', `Created, not submitted yet (${edit})`),
    );
    await wrote;
    times.push(Math.round(performance.now() - started - BATCH_MS));
  }
  const median = [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
  console.log(
    `generate --watch, one machine edited ${EDITS} times (the 50 ms batching subtracted)`,
  );
  console.log(`  times ms: ${times.join(' ')}`);
  console.log(`  median ${median} ms (goal < 300 ms)`);
  console.log(
    `  load average (1 min): ${startLoad.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after`,
  );
} finally {
  child.kill('SIGINT');
  rmSync(dir, { recursive: true, force: true });
}
