/**
 * `mountAdminRoutes` on a hand-built `MachineRouter`, served by Express (the generated example
 * runs Fastify): the group's middleware guards every route, the console page and its diagram
 * fallback are text (not JSON-encoded), the state stream ends after a final state, a child
 * machine is found from its parent. Without middleware, or with one the registry lacks, mounting
 * is refused with `MR_ADMIN_MIDDLEWARE_REQUIRED`. A SQLite file, real HTTP.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { checkoutMachine } from '../../../fixtures/example/machines/checkout.js';
import { orderMachine } from '../../../fixtures/example/machines/order.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { mountExpress } from '../../../src/runtime/http/adapters/express.js';
import { mountAdminRoutes } from '../../../src/runtime/http/admin/admin-routes.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { errorResponse, type Middleware } from '../../../src/runtime/index.js';

const ops: Middleware = (request) =>
  request.headers['authorization'] === 'Bearer ops'
    ? undefined
    : errorResponse(401, 'Unauthenticated.');
const AUTH = { authorization: 'Bearer ops' };

let directory: string;
let runtime: MachineRuntime;
let server: Server;
let base: string;

beforeAll(async () => {
  directory = mkdtempSync(path.join(tmpdir(), 'machine-routes-admin-express-'));
  runtime = await MachineRuntime.open({
    databaseUrl: `sqlite:${path.join(directory, 'admin.db')}`,
    machines: [orderMachine, checkoutMachine],
    migrate: true,
  });
  const router = new MachineRouter({ runtime, middleware: { ops } });
  router.register(orderMachine, { prefix: 'orders', create: true, machineIdFor: ['SUBMIT'] });
  router.register(checkoutMachine, { prefix: 'checkouts', create: true });
  mountAdminRoutes(router, {
    runtime,
    machines: [orderMachine, checkoutMachine],
    admin: { prefix: 'ops/', middleware: ['ops'], cancelEvents: { order: 'CANCEL' } },
  });
  const app = express();
  mountExpress(app, router);
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 30_000);

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await runtime?.close();
  rmSync(directory, { recursive: true, force: true });
});

async function json(
  url: string,
  init: RequestInit = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${base}${url}`, {
    ...init,
    headers: {
      ...AUTH,
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('admin routes mounted by hand on Express', () => {
  it('should serve the console and the API behind the middleware', async () => {
    const page = await fetch(`${base}/ops/console`, { headers: AUTH });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toMatch(/^<!doctype html>[\s\S]*<table id="instances">/);
    // No diagrams were given: the console draws the state list instead.
    expect((await fetch(`${base}/ops/console/diagram/order`, { headers: AUTH })).status).toBe(404);
    for (const url of ['/ops/console', '/ops/api/machines', '/ops/api/machines/order/instances']) {
      expect((await fetch(`${base}${url}`)).status).toBe(401);
    }
    const machines = await json('/ops/api/machines');
    // The checkout's payment child is listed with the machines it was mounted with.
    expect((machines.body['machines'] as { id: string }[]).map((machine) => machine.id)).toEqual([
      'checkout',
      'order',
      'payment',
    ]);
  });

  it('should cancel an order and end its stream after the final state', async () => {
    const created = await json('/orders/create', { method: 'POST' });
    const id = (created.body['data'] as { id: string }).id;
    await json(`/orders/${id}/submit`, {
      method: 'POST',
      body: JSON.stringify({ payload: { amount: 5 } }),
    });
    const stream = await fetch(`${base}/ops/api/machines/order/instances/${id}/stream`, {
      headers: AUTH,
    });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const cancelled = await json(`/ops/api/machines/order/instances/${id}/cancel`, {
      method: 'POST',
      body: JSON.stringify({ who: 'dana' }),
    });
    expect(cancelled.body).toMatchObject({ result: { state: ['order.cancelled'] } });
    // The stream ends by itself after the final state: its whole text can be read.
    const text = await stream.text();
    expect(text).toContain('"state":["order.submitted"]');
    expect(text).toContain('"state":["order.cancelled"],"status":"done"');
  });

  it("should find a checkout's payment child from the parent's record", async () => {
    const created = await json('/checkouts/create', { method: 'POST' });
    const id = (created.body['data'] as { id: string }).id;
    const children = await vi.waitFor(
      async () => {
        const shown = await json(`/ops/api/machines/checkout/instances/${id}`);
        const rows = shown.body['children'] as { id: string; childMachineId: string }[];
        expect(rows).toHaveLength(1);
        return rows;
      },
      { timeout: 15_000, interval: 50 },
    );
    expect(children[0]!.childMachineId).toBe('payment');
    const child = await json(`/ops/api/machines/payment/instances/${children[0]!.id}`);
    expect(child.status).toBe(200);
    expect(child.body['instance']).toMatchObject({
      machineId: 'payment',
      parent: expect.anything(),
    });
  });

  it('should refuse to mount a group without middleware, or with one the registry lacks', () => {
    const router = new MachineRouter({ runtime, middleware: { ops } });
    for (const middleware of [[], ['  '], ['auth:admin']]) {
      expect(() =>
        mountAdminRoutes(router, { runtime, machines: [orderMachine], admin: { middleware } }),
      ).toThrow(expect.objectContaining({ code: 'MR_ADMIN_MIDDLEWARE_REQUIRED' }));
    }
    expect(router.routes).toHaveLength(0);
  });
});
