/**
 * Instructions of a whole compiled start, counted by valgrind's callgrind: a measure the host's
 * load does not move, for start-up A/B runs on a shared machine (CPU time there moves by 10-20%
 * between runs of the same code). `npx tsx bench/startup/run.ts --compiled` first (it writes
 * each checkout's compiled servers under bench/results/startup-js/; a baseline checkout needs its
 * own `npm run build` and that step with `BENCH_BASELINE`), then
 * `npx tsx bench/startup/instructions.ts [<checkout> ...]` (default: this one).
 *
 * Each round starts, per checkout, its compiled example server (Fastify, a fresh SQLite file)
 * under `valgrind --tool=callgrind` with `node --single-threaded`, and in this checkout the floor
 * + SQLite (bench/startup/fastify-zod.ts `--sqlite`); a preload ends the process at its
 * `listening on` line, so the count is the start and nothing after. Checkouts of a round run at
 * once (valgrind is slow: about 25 s of CPU each). Prints each round's counts, then medians and
 * the ratios to the floor + SQLite and to the first checkout.
 *
 * Not exact: Node reads modules on libuv's threads, so the order of their completions, and with
 * it when V8 collects garbage and optimises, changes from start to start; the same build varies
 * by about 2-3% (2.10-2.21 G in one session). Take medians of several rounds (BENCH_ROUNDS,
 * default 5).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const checkouts = (process.argv.length > 2 ? process.argv.slice(2) : [ROOT]).map((checkout) =>
  path.resolve(checkout),
);
const COMPILED = 'bench/results/startup-js';
const dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-startup-instructions-'));
const preload = path.join(dir, 'exit-on-listening.mjs');
writeFileSync(
  preload,
  `// Ends the process at its listening line: callgrind counts the start only.
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => {
  const written = write(chunk, ...rest);
  if (String(chunk).includes('listening on')) process.exit(0);
  return written;
};
`,
);

/** Instructions of one start of `script` in `root` (arguments `args`), to its listening line. */
function countStart(root: string, script: string, args: string[], label: string): Promise<number> {
  const out = path.join(dir, `${label}.callgrind`);
  const database = path.join(dir, `${label}.db`);
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${out}`,
      process.execPath,
      '--single-threaded',
      '--import',
      preload,
      path.join(COMPILED, script),
      ...args,
    ],
    {
      cwd: root,
      env: { ...process.env, PORT: '0', MACHINE_DATABASE_URL: `sqlite:${database}` },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let errors = '';
  child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      const collected = /Collected : (\d+)/.exec(errors);
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${database}${suffix}`, { force: true });
      rmSync(out, { force: true });
      if (code !== 0 || collected === null) reject(new Error(`${label} (${code}): ${errors}`));
      else resolve(Number(collected[1]));
    });
  });
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const giga = (count: number): string => `${(count / 1e9).toFixed(3)} G`;

async function main(): Promise<void> {
  execFileSync('valgrind', ['--version']);
  // A missing compile step (bench/startup/run.ts --compiled) fails here, before valgrind runs.
  for (const root of [ROOT, ...checkouts])
    readFileSync(path.join(root, COMPILED, 'generated-example/server.gen.js'));
  const loadBefore = loadavg()[0]!;
  const floor: number[] = [];
  const counts = checkouts.map(() => [] as number[]);
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const [floorCount, ...exampleCounts] = await Promise.all([
        countStart(ROOT, 'bench/startup/fastify-zod.js', ['--sqlite'], `floor-${round}`),
        ...checkouts.map((checkout, index) =>
          countStart(checkout, 'generated-example/server.gen.js', [], `example-${index}-${round}`),
        ),
      ]);
      floor.push(floorCount!);
      exampleCounts.forEach((count, index) => counts[index]!.push(count));
      console.log(
        `round ${round + 1}: floor + SQLite ${giga(floorCount!)}, ${exampleCounts
          .map((count, index) => `${path.basename(checkouts[index]!)} ${giga(count)}`)
          .join(', ')} (load ${loadavg()[0]!.toFixed(1)})`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`Instructions to the listening line, median of ${ROUNDS} rounds:`);
  console.log(`  floor + SQLite open           ${giga(median(floor))}`);
  checkouts.forEach((checkout, index) => {
    const own = median(counts[index]!);
    const first = median(counts[0]!);
    console.log(
      `  example, ${path.basename(checkout).padEnd(20)} ${giga(own)}  ${(own / median(floor)).toFixed(2)}x the floor + SQLite` +
        (index === 0 ? '' : `, ${(own / first).toFixed(3)}x the first checkout`),
    );
  });
  console.log(
    `  load average (1 min): ${loadBefore.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after`,
  );
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
