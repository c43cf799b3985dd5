/**
 * Why the commit feed's NOTIFY is a transaction of its own (bench/scale/round-trips.ts counts it
 * as the third round trip of a lone event): `npx tsx bench/scale/notify-in-commit.ts`.
 *
 * pgbench on a private cluster (private-postgres.ts), 10 clients, alternating 6 s runs of a
 * writing transaction with and without a `pg_notify` in it. PostgreSQL takes one database-wide
 * lock from a notifying transaction's pre-commit until its commit is done, WAL flush included,
 * so notifying transactions commit one at a time: putting the notice into the event's own
 * commit statement would save the round trip and serialize every event's commit.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { binDirectory, startPrivatePostgres } from './private-postgres.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const cluster = await startPrivatePostgres();
if (cluster === null) {
  console.log('no PostgreSQL binaries for a private cluster: skipped');
  process.exit(0);
}
const directory = mkdtempSync(join(tmpdir(), 'mr-bench-notify-'));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
try {
  const client = new pg.Client(cluster.url);
  await client.connect();
  await client.query('CREATE TABLE t (id bigserial PRIMARY KEY, v int)');
  await client.end();
  const scripts = {
    'insert, commit': 'BEGIN;\nINSERT INTO t (v) VALUES (1);\nSELECT 1;\nCOMMIT;\n',
    'insert, notify, commit':
      "BEGIN;\nINSERT INTO t (v) VALUES (1);\nSELECT pg_notify('c', 'x');\nCOMMIT;\n",
  };
  console.log(
    `10 clients, ${ROUNDS} alternating runs of 6 s, load average ${loadavg()[0]!.toFixed(2)}`,
  );
  const tps = new Map<string, number[]>();
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [name, script] of Object.entries(scripts)) {
      const file = join(directory, 'script.sql');
      writeFileSync(file, script);
      const bin = join(binDirectory()!, 'pgbench');
      const out = execFileSync(bin, [
        '-n',
        '-h',
        '127.0.0.1',
        '-p',
        String(cluster.port),
        '-U',
        'postgres',
        '-c',
        '10',
        '-T',
        '6',
        '-f',
        file,
        'postgres',
      ]).toString();
      const value = Number(/tps = ([\d.]+)/.exec(out)?.[1]);
      console.log(`  ${name.padEnd(24)} ${value.toFixed(0)} tps`);
      tps.set(name, [...(tps.get(name) ?? []), value]);
    }
  }
  const [plain, notify] = [...tps.values()].map(median);
  console.log(
    `median: without ${plain!.toFixed(0)} tps, with NOTIFY ${notify!.toFixed(0)} tps: ${(notify! / plain!).toFixed(2)}x`,
  );
  console.log(`load average at end ${loadavg()[0]!.toFixed(2)}`);
} finally {
  rmSync(directory, { recursive: true, force: true });
  cluster.stop();
}
