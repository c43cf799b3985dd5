/**
 * Promises per event of the machineId-bound route and the hand-written handler (Fastify,
 * SQLite): `npx tsx bench/http/promises.ts [<checkout>[+otel] ...]`. With an OpenTelemetry SDK
 * registered, each promise is a run of the AsyncLocalStorage context manager's hooks, so this is
 * the figure that moves the SDK's cost on the route, and, unlike CPU time, it does not depend on
 * what else the machine runs. Starts bench/http/server.ts of each checkout with
 * bench/http/count-promises.mjs preloaded, sends 50 events to warm up, then 500 sequential events
 * to one instance per route, and prints the promises counted over them per event.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readyLine } from '../ready-line.js';
import { otelEnvironment, serverCheckout } from './otel-checkout.js';

const checkouts = process.argv.slice(2);
if (checkouts.length === 0) checkouts.push(resolve(import.meta.dirname, '../..'));
const EVENTS = 500;
const BODY = JSON.stringify({ payload: { by: 1 } });
const counter = resolve(import.meta.dirname, 'count-promises.mjs');
const pause = (ms: number) => new Promise((done) => setTimeout(done, ms));

for (const checkout of checkouts) {
  const dir = mkdtempSync(join(tmpdir(), 'promises-'));
  const child = spawn(
    process.execPath,
    [
      '--conditions=machine-routes-source',
      '--import',
      'tsx',
      '--import',
      counter,
      resolve(serverCheckout(checkout), 'bench/http/server.ts'),
      'fastify',
      `sqlite:${join(dir, 'server.db')}`,
    ],
    {
      cwd: serverCheckout(checkout),
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...otelEnvironment(checkout) },
    },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  try {
    const [port] = await readyLine(child, `server of ${checkout}`);
    const base = `http://127.0.0.1:${port}`;
    const events = async (prefix: string, id: string, count: number) => {
      for (let index = 0; index < count; index += 1) {
        const response = await fetch(`${base}/${prefix}/${id}/increment`, {
          method: 'POST',
          body: BODY,
          headers: { 'content-type': 'application/json' },
        });
        if (response.status !== 200) throw new Error(`${prefix}: HTTP ${response.status}`);
        await response.text();
      }
    };
    /** Promises counted in the server between two signals, per event sent meanwhile. */
    const counted = async (prefix: string, id: string) => {
      await events(prefix, id, 50);
      await pause(100);
      child.kill('SIGUSR2');
      await pause(300);
      stderr = '';
      await events(prefix, id, EVENTS);
      await pause(100);
      child.kill('SIGUSR2');
      await pause(300);
      const match = /PROMISES (\d+)/.exec(stderr);
      if (match === null) throw new Error(`no count from the server of ${checkout}`);
      return Number(match[1]) / EVENTS;
    };
    const created = async (prefix: string) => {
      const response = await fetch(`${base}/${prefix}/create`, { method: 'POST' });
      return ((await response.json()) as { data: { id: string } }).data.id;
    };
    const bound = await counted('counters', await created('counters'));
    const handWritten = await counted('hw', await created('hw'));
    console.log(
      `${checkout}: promises per event, machineId-bound ${bound.toFixed(1)}, ` +
        `hand-written ${handWritten.toFixed(1)}`,
    );
  } finally {
    child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
