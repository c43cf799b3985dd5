/**
 * The drain of a server (SIGTERM) does not take a connection that never sent a byte for a
 * request in flight: fetch() (undici) opens such a connection when one of its streams is aborted.
 * It is closed once silent for a second, and the drain ends without cutting anything, where it
 * used to wait for it until its bound and report it cut. A real listening server and a raw TCP
 * client on 127.0.0.1.
 */
import { createServer } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ServerDrain } from '../../../src/runtime/http/server-drain.js';

describe('ServerDrain', () => {
  it('should close a connection that sent nothing instead of waiting for it until the bound', async () => {
    const server = createServer((_request, response) => response.end('ok'));
    const drain = new ServerDrain(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const accepted = new Promise<void>((resolve) => server.once('connection', () => resolve()));
    const silent: Socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    const ended = new Promise<void>((resolve) => silent.once('close', () => resolve()));
    silent.on('error', () => undefined);
    await accepted;

    const result = await drain.drain(30_000);

    expect(result.cut).toBe(0);
    await ended;
    expect(server.listening).toBe(false);
  });
});
