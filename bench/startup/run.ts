/**
 * Start-up benchmark: `npx tsx bench/startup/run.ts`.
 *
 * Starts the generated example server (generated-example/server.gen.ts: Fastify, SQLite, every
 * example machine) and bare Fastify (bench/startup/bare-fastify.ts) as processes with the same
 * loader (`node --import tsx`), alternating, ROUNDS times each. For each start it records the
 * wall time from spawn to the `listening on` line, the CPU time the process used until then and
 * its resident memory (both read from /proc, Linux only), then stops it. Reports medians and
 * the ratios of the example to bare Fastify, with the load average.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 7);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLOCK_TICKS = 100; // USER_HZ on Linux

interface Start {
  wallMs: number;
  cpuMs: number;
  rssMb: number;
}

const servers = {
  'example server (machine-routes)': path.join(ROOT, 'generated-example/server.gen.ts'),
  'bare fastify': path.join(ROOT, 'bench/startup/bare-fastify.ts'),
};

/** Starts `script`, waits for its `listening on` line, measures, then stops it. */
function start(script: string, databaseUrl: string): Promise<Start> {
  const began = performance.now();
  const child = spawn(
    process.execPath,
    ['--conditions=machine-routes-source', '--import', 'tsx', script],
    {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', MACHINE_DATABASE_URL: databaseUrl },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}) before listening`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (!line.includes('listening on')) return;
      const wallMs = performance.now() - began;
      // /proc/<pid>/stat fields 14 and 15: user and system CPU in clock ticks.
      const stat = readFileSync(`/proc/${child.pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cpuMs = ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
      child.removeAllListeners('exit');
      child.once('exit', () => resolve({ wallMs, cpuMs, rssMb: rssKb / 1024 }));
      child.kill('SIGTERM');
    });
  });
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-startup-'));
  const loadBefore = loadavg()[0]!;
  const results = new Map<string, Start[]>(Object.keys(servers).map((name) => [name, []]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, script] of Object.entries(servers)) {
        const database = `sqlite:${path.join(dir, `startup-${round}.db`)}`;
        results.get(name)!.push(await start(script, database));
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const summary = [...results].map(([name, starts]) => ({
    name,
    wallMs: median(starts.map((s) => s.wallMs)),
    cpuMs: median(starts.map((s) => s.cpuMs)),
    rssMb: median(starts.map((s) => s.rssMb)),
  }));
  const [example, bare] = summary as [(typeof summary)[0], (typeof summary)[0]];
  console.log(
    `Start-up, spawn to listening, median of ${ROUNDS} alternating starts each (node --import tsx):`,
  );
  for (const row of summary) {
    console.log(
      `  ${row.name.padEnd(32)} wall ${row.wallMs.toFixed(0).padStart(5)} ms  cpu ${row.cpuMs.toFixed(0).padStart(5)} ms  rss ${row.rssMb.toFixed(1).padStart(6)} MB`,
    );
  }
  console.log(
    `  ratio example / bare fastify:    wall ${(example.wallMs / bare.wallMs).toFixed(2)}x  cpu ${(example.cpuMs / bare.cpuMs).toFixed(2)}x  rss ${(example.rssMb / bare.rssMb).toFixed(2)}x`,
  );
  console.log(
    `  load average (1 min): ${loadBefore.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after`,
  );
}

await main();
