import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRouteMethods, type ClientResponse } from '../../src/client/runtime.js';
import { createClient } from './__snapshots__/forwarding/client.gen.js';

/** A fetch that records the request and answers 200 with an empty envelope. */
function recordingFetch(calls: Array<{ url: string; init: RequestInit }>): typeof fetch {
  return async (url, init) => {
    calls.push({ url: String(url), init: init ?? {} });
    return new Response('{"data":{}}', { status: 200 });
  };
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('createClient', () => {
  it("should resolve the config's relative base URL against the page", async () => {
    vi.stubGlobal('location', { href: 'https://shop.example/checkout/' });
    const calls: Array<{ url: string; init: RequestInit }> = [];
    await createClient({ fetch: recordingFetch(calls) }).checkout.provideCard({
      machineId: '01J0000000000000000000000A',
      payload: { card: '4111111111111111' },
    });
    expect(calls).toEqual([
      {
        url: 'https://shop.example/api/checkouts/01J0000000000000000000000A/provide-card',
        init: expect.objectContaining({
          method: 'POST',
          body: '{"type":"PROVIDE_CARD","payload":{"card":"4111111111111111"}}',
        }),
      },
    ]);
  });

  it('should prefer a base URL given to createClient, and send headers and the bearer token', async () => {
    const calls: Array<{ url: string; init: RequestInit }> = [];
    const client = createClient({
      baseUrl: 'http://localhost:3000/',
      headers: () => ({ 'x-tenant': 'acme' }),
      auth: () => 'token-1',
      fetch: recordingFetch(calls),
    });
    await client.checkout.cancel({ machineId: 'a/b' }, { headers: { 'x-request-id': '7' } });
    expect(calls[0]!.url).toBe('http://localhost:3000/checkouts/a%2Fb/cancel');
    expect(calls[0]!.init.headers).toEqual({
      accept: 'application/json',
      'x-tenant': 'acme',
      authorization: 'Bearer token-1',
      'x-request-id': '7',
      'content-type': 'application/json',
    });
  });

  it('should send the scenario fields in the body, and in the query of GET routes', async () => {
    const calls: Array<{ url: string; init: RequestInit }> = [];
    const method = createRouteMethods({ baseUrl: 'http://api', fetch: recordingFetch(calls) });
    const spec = { path: '/orders/{machineId}/pay', input: true, statuses: [200] } as const;
    await method({ ...spec, method: 'POST', event: 'PAY' })({
      machineId: 'x',
      scenario: 'declined',
      scenarioParams: { reason: 'expired' },
    });
    await method({ ...spec, method: 'POST', event: 'PAY' })({ machineId: 'x', scenario: null });
    await method({ ...spec, method: 'GET', event: 'PAY' })({
      machineId: 'x',
      payload: { n: 1 },
      scenario: 'declined',
      scenarioParams: { reason: 'expired' },
    });
    expect(calls.map((call) => call.init.body)).toEqual([
      '{"type":"PAY","scenario":"declined","scenarioParams":{"reason":"expired"}}',
      '{"type":"PAY","scenario":null}',
      undefined,
    ]);
    expect(calls[2]!.url).toBe(
      'http://api/orders/x/pay?n=1&scenario=declined&scenarioParams%5Breason%5D=expired',
    );
  });

  it('should retry only a 423 whose snapshot says the instance is processing, and only when asked', async () => {
    const answers = (processing: boolean) => {
      let calls = 0;
      const fetchImpl: typeof fetch = async () => {
        calls += 1;
        return new Response(JSON.stringify({ data: { isProcessing: processing } }), {
          status: 423,
        });
      };
      return { fetchImpl, calls: () => calls };
    };
    const spec = {
      method: 'POST',
      path: '/orders/{machineId}/cancel',
      event: 'CANCEL',
      input: true,
      statuses: [200, 423],
    } as const;
    const quick = { retries: 2, delay: 1, maxDelay: 1 };
    type Answer = ClientResponse<200 | 423, unknown>;

    const idle = answers(false);
    const method = createRouteMethods({ baseUrl: 'http://api', fetch: idle.fetchImpl });
    expect(
      (
        await method<{ machineId: string }, Answer>(spec)(
          { machineId: 'x' },
          { retryOnLocked: quick },
        )
      ).status,
    ).toBe(423);
    expect(idle.calls()).toBe(1);

    const busy = answers(true);
    const retrying = createRouteMethods({
      baseUrl: 'http://api',
      fetch: busy.fetchImpl,
      retryOnLocked: quick,
    });
    expect((await retrying<{ machineId: string }, Answer>(spec)({ machineId: 'x' })).status).toBe(
      423,
    );
    expect(busy.calls()).toBe(3);
    // `false` per call turns the client's retry off.
    await retrying(spec)({ machineId: 'x' }, { retryOnLocked: false });
    expect(busy.calls()).toBe(4);
  });

  it("should send the client's credentials, and the call's over them", async () => {
    const calls: Array<{ url: string; init: RequestInit }> = [];
    const client = createClient({
      baseUrl: 'http://api',
      credentials: 'include',
      fetch: recordingFetch(calls),
    });
    const input = { machineId: 'x' };
    await client.checkout.cancel(input);
    await client.checkout.cancel(input, { credentials: 'omit', headers: { accept: 'text/plain' } });
    expect(calls.map((call) => call.init.credentials)).toEqual(['include', 'omit']);
    expect((calls[1]!.init.headers as Record<string, string>)['accept']).toBe('text/plain');
  });
});

describe('createClient live state', () => {
  it('should parse server-sent events, send Last-Event-ID, and resolve on abort', async () => {
    const { createClient: createExampleClient } =
      await import('./__snapshots__/fastify/client.gen.js');
    const encoder = new TextEncoder();
    let sent: RequestInit | undefined;
    const controller = new AbortController();
    const fetchStream: typeof fetch = async (_url, init) => {
      sent = init;
      const body = new ReadableStream<Uint8Array>({
        start(stream) {
          stream.enqueue(encoder.encode('retry: 1000\n\n: keep-alive\n\nid: 7\nevent: state\r\n'));
          stream.enqueue(encoder.encode('data: {"data":{"id":"x","state":["order.draft"]}}\n\n'));
          init?.signal?.addEventListener('abort', () =>
            stream.error(new DOMException('aborted', 'AbortError')),
          );
        },
      });
      return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
    };
    const client = createExampleClient({ baseUrl: 'http://api.test', fetch: fetchStream });
    const received: Array<[unknown, number]> = [];
    await client.order.subscribe(
      { machineId: 'x' },
      {
        lastEventId: 5,
        signal: controller.signal,
        onState: (message, sequence) => {
          received.push([message, sequence]);
          controller.abort();
        },
      },
    );
    expect(received).toEqual([[{ data: { id: 'x', state: ['order.draft'] } }, 7]]);
    expect((sent?.headers as Record<string, string>)['last-event-id']).toBe('5');
    expect((sent?.headers as Record<string, string>)['accept']).toBe('text/event-stream');
  });

  it('should send waitFor and timeout as the read query', async () => {
    const { createClient: createExampleClient } =
      await import('./__snapshots__/fastify/client.gen.js');
    const calls: Array<{ url: string; init: RequestInit }> = [];
    const client = createExampleClient({
      baseUrl: 'http://api.test',
      fetch: recordingFetch(calls),
    });
    await client.order.waitFor({ machineId: 'x', state: 'order.submitted', timeout: 5000 });
    expect(calls.map((call) => call.url)).toEqual([
      'http://api.test/orders/x/status?waitFor=order.submitted&timeout=5000',
    ]);
  });
});
