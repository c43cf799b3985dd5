/**
 * Where an idle subscriber's memory goes: `npx tsx bench/scale/subscribers-heap.ts [mr|raw] [N]`.
 * Starts a subscribers-server.ts (machine-routes on SQLite, or the raw Fastify SSE baseline),
 * takes a heap snapshot with one subscriber, opens N more (default 2,000) on the same instance,
 * takes another, and prints the heap's growth per subscriber by constructor (objects and self
 * bytes), largest first. Self sizes: what each object holds itself, so the rows add up.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readyLine } from '../ready-line.js';

const kind = (process.argv[2] ?? 'mr') as 'mr' | 'raw';
const N = Number(process.argv[3] ?? 2000);
const directory = mkdtempSync(join(tmpdir(), 'mr-bench-heap-'));
const script = fileURLToPath(new URL('./subscribers-server.ts', import.meta.url));

function call(port: number, method: string, path: string, body?: unknown): Promise<string> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? '' : JSON.stringify(body);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: text ? { 'content-type': 'application/json' } : {},
      },
      (res) => {
        let data = '';
        res.on('data', (chunk: Buffer) => (data += chunk.toString()));
        res.on('end', () => resolve(data));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/** Self bytes and object count by constructor name (`type:name` for non-objects). */
function census(file: string): Map<string, { count: number; bytes: number }> {
  const snapshot = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snapshot.snapshot.meta.node_fields;
  const types = snapshot.snapshot.meta.node_types[0];
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
  const out = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < snapshot.nodes.length; i += fields.length) {
    const type = types[snapshot.nodes[i + typeAt!]!]!;
    const name =
      type === 'object' || type === 'closure'
        ? snapshot.strings[snapshot.nodes[i + nameAt!]!]!
        : type;
    const key = type === 'object' ? name : `(${type}) ${type === 'closure' ? name : ''}`.trim();
    const entry = out.get(key) ?? { count: 0, bytes: 0 };
    entry.count += 1;
    entry.bytes += snapshot.nodes[i + sizeAt!]!;
    out.set(key, entry);
  }
  return out;
}

const child = spawn(
  process.execPath,
  [
    '--expose-gc',
    '--conditions=machine-routes-source',
    '--import',
    'tsx',
    script,
    kind,
    `sqlite:${join(directory, 'heap.db')}`,
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const sockets: Socket[] = [];
try {
  const port = Number((await readyLine(child, 'server'))[0]);
  let path = '/raw/hot/events';
  if (kind === 'mr') {
    const id = (
      JSON.parse(await call(port, 'POST', '/counters/create', {})) as { data: { id: string } }
    ).data.id;
    path = `/counters/${id}/events`;
  }
  const open = (count: number) =>
    new Promise<void>((resolve) => {
      let left = count;
      for (let i = 0; i < count; i += 1) {
        const socket = connect(port, '127.0.0.1', () =>
          socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`),
        );
        let seen = false;
        socket.on('data', (chunk: Buffer) => {
          if (!seen && chunk.toString().includes('event: state')) {
            seen = true;
            if (--left === 0) resolve();
          }
        });
        sockets.push(socket);
      }
    });
  await open(1);
  const before = join(directory, 'before.heapsnapshot');
  const after = join(directory, 'after.heapsnapshot');
  await call(port, 'GET', `/snapshot?to=${encodeURIComponent(before)}`);
  for (let opened = 0; opened < N; opened += 200) await open(Math.min(200, N - opened));
  await new Promise((resolve) => setTimeout(resolve, 300));
  await call(port, 'GET', `/snapshot?to=${encodeURIComponent(after)}`);
  const [a, b] = [census(before), census(after)];
  const rows = [...b].map(([name, { count, bytes }]) => ({
    name,
    count: (count - (a.get(name)?.count ?? 0)) / N,
    bytes: (bytes - (a.get(name)?.bytes ?? 0)) / N,
  }));
  rows.sort((x, y) => y.bytes - x.bytes);
  const total = rows.reduce((sum, row) => sum + row.bytes, 0);
  console.log(
    `${kind}: heap growth per subscriber over ${N}: ${total.toFixed(0)} bytes (self sizes)`,
  );
  for (const row of rows.slice(0, 30)) {
    console.log(
      `  ${row.bytes.toFixed(0).padStart(6)} B  ${row.count.toFixed(2).padStart(6)} objects  ${row.name}`,
    );
  }
} finally {
  for (const socket of sockets) socket.destroy();
  child.kill('SIGTERM');
  rmSync(directory, { recursive: true, force: true });
}
