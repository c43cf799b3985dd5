/**
 * A state stream whose client left does not keep the server's close waiting: the client is a
 * fetch() aborted after its first message (undici) or a node:http request destroyed, on both
 * adapters; close() then resolves (bounded here only so that a hang fails the test instead of
 * the run), without waiting for the spare connection fetch() opens then to be dropped by its
 * client. A plain close() of a server whose stream a client still follows ends that stream.
 */
import { request } from 'node:http';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { openStore } from '../../../src/runtime/persistence/open-store.js';
import { LIVE_REGISTRATION, liveMachine } from './fixtures/live-machine.js';
import { send, startServer, type AdapterName } from './support/servers.js';
import { openStream } from './support/sse.js';

const settle = (ms = 150) => new Promise((resolve) => setTimeout(resolve, ms));

/** `close()` of the server, or 'hung' when it is still waiting after 10 s. */
const closed = (close: () => Promise<void>) =>
  Promise.race([
    close().then(() => 'closed' as const),
    new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 10_000).unref()),
  ]);

describe.each<AdapterName>(['fastify', 'express'])('closing %s with a left stream', (adapter) => {
  let runtime: MachineRuntime;

  beforeAll(async () => {
    runtime = new MachineRuntime({ store: await openStore('memory:') });
  });
  afterAll(async () => {
    await runtime.close();
  });

  const serve = async () => {
    const router = new MachineRouter({ runtime });
    router.register(liveMachine, LIVE_REGISTRATION);
    const server = await startServer(adapter, [router], { error: () => {} });
    const created = await send(server.url, 'POST', '/live/create');
    const id = (created.body as { data: { id: string } }).data.id;
    return { server, url: `${server.url}/live/${id}/events` };
  };

  it('should close once a fetch() client aborted its stream', async () => {
    const { server, url } = await serve();
    // Connections on which nothing was asked that their client ended: undici's spare one, which
    // a plain close() waited for until undici's keep-alive time (~3 s) had run out.
    const leftToClient: Socket[] = [];
    server.http.on('connection', (socket: Socket) =>
      socket.once('end', () => {
        if (socket.bytesRead === 0) leftToClient.push(socket);
      }),
    );
    const stream = await openStream(url);
    await stream.received(1);
    stream.close();
    await settle();
    expect(await closed(() => server.close())).toBe('closed');
    expect(leftToClient).toEqual([]);
  });

  it('should close while a client still follows a stream', async () => {
    const { server, url } = await serve();
    const stream = await openStream(url);
    await stream.received(1);
    expect(await closed(() => server.close())).toBe('closed');
    await stream.untilEnded();
    stream.close();
  });

  it('should close once a node:http client destroyed its stream', async () => {
    const { server, url } = await serve();
    await new Promise<void>((resolve, reject) => {
      const outgoing = request(url, { headers: { accept: 'text/event-stream' } }, (response) => {
        response.once('data', () => {
          outgoing.destroy();
          resolve();
        });
      });
      outgoing.on('error', () => undefined);
      outgoing.once('response', () => undefined);
      outgoing.end();
      setTimeout(() => reject(new Error('no first message')), 10_000).unref();
    });
    await settle();
    expect(await closed(() => server.close())).toBe('closed');
  });
});
