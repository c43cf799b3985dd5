/**
 * Flow control of event routes (the registration's `flow`, docs/http.md "Flow control") over
 * real HTTP on a SQLite file and PostgreSQL: in-flight sends per header key, a rate per payload
 * key and per context key, debounce (the last of a burst is sent), and across two server
 * processes sharing one PostgreSQL database. Every refusal is the documented 429: `Retry-After`
 * (but for debounce) and a body valid against the OpenAPI document's `FlowLimitedResponse`.
 * Bad declarations are refused at planning with MR_INVALID_FLOW_CONTROL.
 */
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { heldCount, ledgerMachine, releaseHeld } from '../../../fixtures/http/ledger-machine.js';
import { FLOW_LIMITED_BODY } from '../../../src/generator/emitters/openapi-flow.js';
import { InvalidFlowControlException } from '../../../src/runtime/errors.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { planRegistration, planRoutes } from '../../../src/runtime/http/plan-routes.js';
import type { RegistrationOptions } from '../../../src/runtime/http/types.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { useServerProcesses } from './support/server-processes.js';
import { send, startServer, type JsonResponse, type TestServer } from './support/servers.js';

const SERVER = fileURLToPath(new URL('./fixtures/ledger-server.ts', import.meta.url));

/** NOTE holds its request in before() for `x-delay-ms`: two of a tenant at once, no more. */
const CONCURRENT: RegistrationOptions = {
  prefix: 'conc',
  name: 'conc',
  create: true,
  machineIdFor: ['NOTE'],
  only: ['NOTE'],
  flow: { NOTE: { key: { header: 'x-tenant' }, concurrency: 2 } },
};
const RATED: RegistrationOptions = {
  prefix: 'rated',
  name: 'rated',
  create: true,
  machineIdFor: ['NOTE', 'ADD'],
  only: ['NOTE', 'ADD'],
  flow: {
    NOTE: { key: { payload: 'text' }, rate: { limit: 3, interval: 60_000 } },
    ADD: { key: { context: 'notes' }, rate: { limit: 2, interval: 60_000 } },
  },
};
const DEBOUNCED: RegistrationOptions = {
  prefix: 'debounced',
  name: 'debounced',
  create: true,
  machineIdFor: ['NOTE'],
  only: ['NOTE'],
  flow: { NOTE: { debounce: { window: 1000 } } },
};

/** As CONCURRENT, on a route of its own: its holds alone make its Retry-After. */
const SLOW: RegistrationOptions = { ...CONCURRENT, prefix: 'slow', name: 'slow' };

/**
 * A burst that never pauses for its 2.5 s window still sends, its latest 2.5 s after its first
 * (maxWait is at least the window; equal, the first request of a burst waits no longer).
 */
const MAX_WAIT: RegistrationOptions = {
  prefix: 'maxwait',
  name: 'maxwait',
  create: true,
  machineIdFor: ['NOTE'],
  only: ['NOTE'],
  flow: { NOTE: { debounce: { window: 2500, maxWait: 2500 } } },
};

/** One note per 2 s per tenant header: a flooding tenant's token calls (flow-control.ts). */
const FLOODED: RegistrationOptions = {
  prefix: 'flooded',
  name: 'flooded',
  create: true,
  machineIdFor: ['NOTE'],
  only: ['NOTE'],
  flow: { NOTE: { key: { header: 'x-tenant' }, rate: { limit: 1, interval: 2000 } } },
};

/** Creates limited per tenant header: 2 per minute. */
const CREATES: RegistrationOptions = {
  prefix: 'creates',
  name: 'creates',
  create: true,
  machineIdFor: ['NOTE'],
  only: ['NOTE'],
  flow: { '@create': { key: { header: 'x-tenant' }, rate: { limit: 2, interval: 60_000 } } },
};

/** One NOTE per tenant per minute: the second is refused before its body is read. */
const EARLY: RegistrationOptions = {
  prefix: 'early',
  name: 'early',
  create: true,
  machineIdFor: ['NOTE'],
  only: ['NOTE'],
  flow: { NOTE: { key: { header: 'x-tenant' }, rate: { limit: 1, interval: 60_000 } } },
};

/** At most two archived ledgers at a time. */
const ARCHIVES: RegistrationOptions = {
  prefix: 'archives',
  name: 'archives',
  create: true,
  machineIdFor: ['ARCHIVE', 'REOPEN'],
  only: ['ARCHIVE', 'REOPEN'],
  flow: { ARCHIVE: { inState: { state: 'archived', limit: 2 } } },
};

/** 20 per second and 4 in flight per tenant; a tenant's sends to one ledger queue, not 423. */
const FAIR: RegistrationOptions = {
  prefix: 'fair',
  name: 'fair',
  create: true,
  machineIdFor: ['NOTE'],
  only: ['NOTE'],
  contention: { wait: 5000 },
  flow: {
    NOTE: { key: { header: 'x-tenant' }, concurrency: 4, rate: { limit: 20, interval: 1000 } },
  },
};

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('flow-control-http');
if (postgres) backends.push(postgres);

const ajv = new Ajv2020({ strict: false });
const validBody = ajv.compile(FLOW_LIMITED_BODY);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A refusal as documented: 429, the typed body, Retry-After equal to `retryAfter` (none for debounce). */
function expectDocumentedRefusal(response: JsonResponse, limit: string): void {
  expect(response.status).toBe(429);
  expect(validBody(response.body), ajv.errorsText(validBody.errors)).toBe(true);
  const body = response.body as { limit: string; retryAfter: number | null };
  expect(body.limit).toBe(limit);
  const header = response.headers.get('retry-after');
  if (limit === 'debounce') {
    expect(header).toBeNull();
    expect(body.retryAfter).toBeNull();
  } else {
    expect(header).toBe(String(body.retryAfter));
  }
}

async function created(url: string, prefix: string): Promise<string> {
  const answer = await send(url, 'POST', `/${prefix}/create`);
  expect(answer.status).toBe(201);
  return (answer.body as { data: { id: string } }).data.id;
}

describe('flow option', () => {
  it('should plan flow on the routes it names, with 429 among their statuses', () => {
    const routes = planRoutes(ledgerMachine, RATED);
    const note = routes.find((route) => route.name === 'rated.note')!;
    expect(note.flow).toEqual({
      key: { payload: 'text' },
      rate: { limit: 3, interval: 60_000 },
    });
    expect(note.errorStatuses).toContain(429);
    expect(routes.find((route) => route.name === 'rated.create')?.flow).toBeUndefined();
    expect(planRoutes(ledgerMachine, CONCURRENT)[1]?.flow?.key).toEqual({ header: 'x-tenant' });
  });

  it.each([
    [{ PAY: { concurrency: 1 } }, /'flow' of `PAY` names no event route.*Use one of: NOTE/],
    [{ NOTE: {} }, /sets no limit: give concurrency, rate, debounce or inState/],
    [
      { NOTE: { inState: { state: 'gone', limit: 1 } } },
      /state 'gone', which machine 'ledger' does not have/,
    ],
    [{ NOTE: { concurency: 2 } }, /unknown key 'concurency' \(did you mean 'concurrency'\?\)/],
    [{ NOTE: { concurrency: 0 } }, /concurrency 0: use .* an integer from 1 to 10000/],
    [{ NOTE: { rate: { limit: 5 } } }, /rate \{"limit":5\}: use \{ limit, interval \}/],
    [{ NOTE: { debounce: { window: 120_000 } } }, /debounce .* \(1 to 60000\)/],
    [{ NOTE: { debounce: { window: 500, maxWait: 100 } } }, /debounce .*maxWait.*\(window to/],
    [{ NOTE: { key: { cookie: 'a' }, concurrency: 1 } }, /has key .* use one source/],
    [{ NOTE: { key: { header: 'x tenant' }, concurrency: 1 } }, /not a header name/],
  ])('should refuse %j with MR_INVALID_FLOW_CONTROL', (flow, message) => {
    const plan = planRegistration(ledgerMachine, { ...CONCURRENT, flow } as RegistrationOptions);
    expect(plan.issues).toHaveLength(1);
    expect(plan.issues[0]).toBeInstanceOf(InvalidFlowControlException);
    expect(plan.issues[0]!.code).toBe('MR_INVALID_FLOW_CONTROL');
    expect(plan.issues[0]!.message).toMatch(message);
    expect(plan.issues[0]!.message).toMatch(/machine 'ledger', registration 'conc'/);
  });

  it.each([
    [
      { key: { payload: 'text' }, rate: { limit: 1, interval: 1000 } },
      /has a payload key, but a create route reads no payload/,
    ],
    [{ debounce: { window: 100 } }, /has debounce, which a create route cannot have/],
    [{ inState: { state: 'archived', limit: 1 } }, /has inState, which a create route cannot have/],
  ])('should refuse @create flow %j with MR_INVALID_FLOW_CONTROL', (entry, message) => {
    const plan = planRegistration(ledgerMachine, {
      ...CREATES,
      flow: { '@create': entry },
    } as RegistrationOptions);
    expect(plan.issues.map((issue) => issue.code)).toEqual(['MR_INVALID_FLOW_CONTROL']);
    expect(plan.issues[0]!.message).toMatch(message);
    expect(plan.issues[0]!.message).toMatch(/'flow' of `@create`.*registration 'creates'/);
  });

  it('should plan @create on the create route, and name it among the routes flow can take', () => {
    const routes = planRoutes(ledgerMachine, CREATES);
    const create = routes.find((route) => route.name === 'creates.create')!;
    expect(create.flow).toEqual({
      key: { header: 'x-tenant' },
      rate: { limit: 2, interval: 60_000 },
    });
    expect(create.errorStatuses).toContain(429);
    const plan = planRegistration(ledgerMachine, { ...CREATES, flow: { PAY: { concurrency: 1 } } });
    expect(plan.issues[0]!.message).toMatch(/Use one of: NOTE, @create/);
    const without = planRegistration(ledgerMachine, { ...CREATES, create: false });
    expect(without.issues.map((issue) => issue.message)).toEqual([
      expect.stringMatching(
        /names the create route, which this registration does not have: set create: true/,
      ),
    ]);
  });

  it('should refuse a context key on a create-or-send route', () => {
    const plan = planRegistration(ledgerMachine, {
      prefix: 'keyed',
      only: ['NOTE'],
      createOrSend: { key: 'n', events: ['NOTE'] },
      flow: { NOTE: { key: { context: 'notes' }, concurrency: 1 } },
    } as RegistrationOptions);
    expect(plan.issues.map((issue) => issue.message)).toEqual([
      expect.stringMatching(/reads its key from the context, but route .* is create-or-send/),
    ]);
  });

  it('should refuse a context key on a route without an instance', () => {
    const plan = planRegistration(ledgerMachine, {
      prefix: 'free',
      only: ['NOTE'],
      flow: { NOTE: { key: { context: 'notes' }, concurrency: 1 } },
    });
    expect(plan.issues.map((issue) => issue.message)).toEqual([
      expect.stringMatching(
        /reads its key from the context, but route ledger.note sends to a new instance/,
      ),
    ]);
  });
});

describe.each(backends)('flow control over HTTP on $name', (backend) => {
  let runtime: MachineRuntime;
  let server: TestServer;

  beforeAll(async () => {
    await backend.setUp();
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
    });
    const router = new MachineRouter({ runtime });
    for (const options of [
      CONCURRENT,
      RATED,
      DEBOUNCED,
      FAIR,
      ARCHIVES,
      MAX_WAIT,
      CREATES,
      EARLY,
      SLOW,
      FLOODED,
    ])
      router.register(ledgerMachine, options);
    server = await startServer('fastify', [router], { error: () => {} });
  });
  afterAll(async () => {
    await server?.close();
    await runtime?.close();
    await backend.tearDown();
  });

  it('should let two requests of a tenant be in flight at once and refuse the rest', async () => {
    const ids = await Promise.all(Array.from({ length: 6 }, () => created(server.url, 'conc')));
    // Held until released: in flight however slowly the host answers the others.
    const hold = `conc-${backend.name}`;
    const note = (id: string, tenant: string, headers: Record<string, string> = {}) =>
      send(server.url, 'POST', `/conc/${id}/note`, {
        body: { payload: { n: 1 } },
        headers: { 'x-tenant': tenant, ...headers },
      });
    const pending = ids.slice(0, 5).map((id) => note(id, 'a', { 'x-hold': hold }));
    const settled: JsonResponse[] = [];
    for (const answer of pending) void answer.then((done) => settled.push(done));
    // The two holding slots cannot answer before the release: the other three are refusals.
    while (settled.length < 3) await sleep(20);
    const tenantB = await note(ids[5]!, 'b');
    releaseHeld(hold);
    const tenantA = await Promise.all(pending);
    const answers = [...tenantA, tenantB];
    expect(tenantA.filter((answer) => answer.status === 200)).toHaveLength(2);
    const refused = tenantA.filter((answer) => answer.status !== 200);
    expect(refused).toHaveLength(3);
    for (const answer of refused) expectDocumentedRefusal(answer, 'concurrency');
    expect(answers[5]!.status).toBe(200);
    // Nothing was sent for the refused ones; their slots were never taken, the others' given back.
    const notes = await Promise.all(ids.slice(0, 5).map((id) => runtime.store.load(id)));
    expect(notes.map((snapshot) => snapshot!.context['notes']).sort()).toEqual([0, 0, 0, 1, 1]);
    expect((await note(ids[0]!, 'a')).status).toBe(200);
  });

  it('should ask a refused request to wait about as long as slots are held', async () => {
    const ids = await Promise.all(Array.from({ length: 3 }, () => created(server.url, 'slow')));
    // Every request here holds its slot 2.5 s or longer (the host's load only adds): the
    // route's mean hold is over 2.5 s, and a refusal says 3 s or more.
    const note = (id: string, headers: Record<string, string>) =>
      send(server.url, 'POST', `/slow/${id}/note`, {
        body: { payload: { n: 1 } },
        headers: { 'x-tenant': 'slow', 'x-delay-ms': '2500', ...headers },
      });
    await Promise.all([note(ids[0]!, {}), note(ids[1]!, {})]);
    const hold = `slow-${backend.name}`;
    const holding = ids.slice(0, 2).map((id) => note(id, { 'x-hold': hold }));
    // Both admitted (held in before(), after the gate): the next request of 'slow' is refused.
    while (heldCount(hold) < 2) await sleep(20);
    const refused = await note(ids[2]!, {});
    releaseHeld(hold);
    await Promise.all(holding);
    expectDocumentedRefusal(refused, 'concurrency');
    expect((refused.body as { retryAfter: number }).retryAfter).toBeGreaterThanOrEqual(3);
  }, 90_000);

  it('should limit creates per tenant header on the create route', async () => {
    const create = (tenant: string) =>
      send(server.url, 'POST', '/creates/create', { headers: { 'x-tenant': tenant } });
    const answers = [await create('a'), await create('a'), await create('a'), await create('b')];
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 429, 201]);
    expectDocumentedRefusal(answers[2]!, 'rate');
    expect((answers[2]!.body as { message: string }).message).toMatch(/Route creates\.create:/);
  });

  /** EARLY alone, for a server of another adapter on the same runtime. */
  const earlyRouter = (): MachineRouter => {
    const router = new MachineRouter({ runtime });
    router.register(ledgerMachine, EARLY);
    return router;
  };

  it.each(['fastify', 'express'] as const)(
    'should refuse a key known refused before reading the body, and spend no token (%s)',
    async (adapter) => {
      // Express: a server of its own on the same runtime; the counters are the store's, so each
      // adapter counts tenants of its own.
      const own =
        adapter === 'fastify'
          ? null
          : await startServer(adapter, [earlyRouter()], { error: () => {} });
      const url = own?.url ?? server.url;
      try {
        const id = await created(url, 'early');
        const note = (tenant: string, body: string) =>
          send(url, 'POST', `/early/${id}/note`, {
            raw: body,
            headers: { 'x-tenant': `${tenant}-${adapter}`, 'content-type': 'application/json' },
          });
        expect((await note('a', '{"payload":{"n":1}}')).status).toBe(200);
        // The bucket refuses the next one: from now on this process knows 'a' is refused.
        expectDocumentedRefusal(await note('a', '{"payload":{"n":1}}'), 'rate');
        // Known refused: 429 whatever the body (read, it would be the malformed body's 400).
        expectDocumentedRefusal(await note('a', '{"payload":'), 'rate');
        // Not known refused: the body is read and answered.
        expect((await note('b', '{"payload":')).status).toBe(400);
        // A request refused by validation used no token: tenant b still has its one.
        expect((await note('b', '{"payload":{"n":2}}')).status).toBe(200);
        expect((await runtime.store.load(id))!.context['notes']).toBe(2);
      } finally {
        await own?.close();
      }
    },
  );

  it("should ask the store for a flooding key's tokens one call at a time", async () => {
    const id = await created(server.url, 'flooded');
    const note = () =>
      send(server.url, 'POST', `/flooded/${id}/note`, {
        body: { payload: { n: 1 } },
        headers: { 'x-tenant': 'flood' },
      });
    expect((await note()).status).toBe(200);
    const refused = await note();
    expectDocumentedRefusal(refused, 'rate');
    // Past the refusal (known to this process until then), within the next interval: the key
    // is flooding. Twenty at once: one token is due, the rest are refused by the store's
    // answer to at most two calls (the first, granted; the next, refused for all that waited).
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const calls = vi.spyOn(runtime.store.flowControl, 'takeToken');
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, note));
      expect(answers.filter((answer) => answer.status === 200)).toHaveLength(1);
      for (const answer of answers.filter((one) => one.status !== 200))
        expectDocumentedRefusal(answer, 'rate');
      expect(calls.mock.calls.length).toBeLessThanOrEqual(2);
    } finally {
      calls.mockRestore();
    }
    expect((await runtime.store.load(id))!.context['notes']).toBe(2);
  });

  it('should send a burst that never pauses at least every maxWait', async () => {
    const id = await created(server.url, 'maxwait');
    const burst: Promise<JsonResponse>[] = [];
    // One request every 100 ms for 4 s: never a pause of the 2.5 s window.
    const started = Date.now();
    for (let n = 1; Date.now() - started < 4000; n += 1) {
      burst.push(send(server.url, 'POST', `/maxwait/${id}/note`, { body: { payload: { n } } }));
      await sleep(100);
    }
    const answers = await Promise.all(burst);
    const sent = answers.filter((answer) => answer.status === 200);
    for (const answer of answers.filter((answer) => answer.status !== 200))
      expectDocumentedRefusal(answer, 'debounce');
    // Without maxWait only the last would be sent; with it, one 2.5 s into the burst too.
    expect(answers.slice(0, -1).some((answer) => answer.status === 200)).toBe(true);
    const seen = (await runtime.store.load(id))!.context['seen'] as number[];
    expect(seen).toHaveLength(sent.length);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
  }, 60_000);

  it('should count a rate per payload key and per context key', async () => {
    const id = await created(server.url, 'rated');
    const note = (text?: string) =>
      send(server.url, 'POST', `/rated/${id}/note`, {
        body: { payload: text === undefined ? { n: 1 } : { n: 1, text } },
      });
    const first = [await note('a'), await note('a'), await note('a'), await note('a')];
    expect(first.map((answer) => answer.status)).toEqual([200, 200, 200, 429]);
    expectDocumentedRefusal(first[3]!, 'rate');
    // 3 per minute: the next token of 'a' comes 20 s after the last one.
    expect((first[3]!.body as { retryAfter: number }).retryAfter).toBeGreaterThanOrEqual(19);
    expect((first[3]!.body as { retryAfter: number }).retryAfter).toBeLessThanOrEqual(20);
    expect((await note('b')).status).toBe(200);
    expect((await note()).status).toBe(200);
    expect((await runtime.store.load(id))!.context['notes']).toBe(5);

    // ADD counts per the instance's `notes`: a fresh ledger (0 notes) has its own two.
    const fresh = await created(server.url, 'rated');
    const add = (ledger: string) =>
      send(server.url, 'POST', `/rated/${ledger}/add`, { body: { payload: { amount: 1 } } });
    const adds = [await add(fresh), await add(fresh), await add(fresh)];
    expect(adds.map((answer) => answer.status)).toEqual([200, 200, 429]);
    expectDocumentedRefusal(adds[2]!, 'rate');
    expect((await add(id)).status).toBe(200);
    expect((await runtime.store.load(fresh))!.context['total']).toBe(2);
  });

  it('should send only the last request of a burst within the debounce window', async () => {
    const id = await created(server.url, 'debounced');
    const burst: Promise<JsonResponse>[] = [];
    for (let n = 1; n <= 4; n += 1) {
      burst.push(send(server.url, 'POST', `/debounced/${id}/note`, { body: { payload: { n } } }));
      await sleep(50);
    }
    const answers = await Promise.all(burst);
    // The last to reach the server is sent: usually the 4th, but on a loaded machine requests
    // 50 ms apart on separate connections may arrive out of order. Exactly one is sent.
    const sent = answers.flatMap((answer, index) => (answer.status === 200 ? [index + 1] : []));
    expect(sent).toHaveLength(1);
    for (const answer of answers.filter((answer) => answer.status !== 200))
      expectDocumentedRefusal(answer, 'debounce');
    expect((await runtime.store.load(id))!.context['seen']).toEqual(sent);
    // Alone in its window, a request is sent.
    const alone = await send(server.url, 'POST', `/debounced/${id}/note`, {
      body: { payload: { n: 5 } },
    });
    expect(alone.status).toBe(200);
    expect((await runtime.store.load(id))!.context['seen']).toEqual([...sent, 5]);
  });

  it('should let at most two instances into a state, however many ask at once', async () => {
    const ids = await Promise.all(Array.from({ length: 5 }, () => created(server.url, 'archives')));
    const archive = (id: string) => send(server.url, 'POST', `/archives/${id}/archive`);
    const answers = await Promise.all(ids.map(archive));
    const archived = ids.filter((_, index) => answers[index]!.status === 200);
    expect(archived).toHaveLength(2);
    for (const answer of answers.filter((answer) => answer.status !== 200))
      expectDocumentedRefusal(answer, 'instances');
    const left = ids.find((id) => !archived.includes(id))!;
    expect((await archive(left)).status).toBe(429);
    // One leaves the state: there is room for one more.
    expect((await send(server.url, 'POST', `/archives/${archived[0]}/reopen`)).status).toBe(200);
    expect((await archive(left)).status).toBe(200);
    expect((await archive(archived[0]!)).status).toBe(429);
  });

  // Behaviour, not timing (latency is measured in bench/flow/run.ts): B sends under its rate
  // while A sends 100 requests for each of B's; B is never refused, A only with documented 429s.
  it('should keep a tenant under its limits unrefused while another floods at 100x', async () => {
    const idB = await created(server.url, 'fair');
    const idsA = await Promise.all(Array.from({ length: 4 }, () => created(server.url, 'fair')));
    const started = Date.now();
    let stop = false;
    let sentA = 0;
    const answersA: JsonResponse[] = [];
    const flood = Promise.all(
      Array.from({ length: 10 }, async (_, worker) => {
        while (!stop && sentA < 500) {
          sentA += 1;
          answersA.push(
            await send(server.url, 'POST', `/fair/${idsA[(worker + sentA) % 4]}/note`, {
              body: { payload: { n: sentA } },
              headers: { 'x-tenant': 'a' },
            }),
          );
        }
      }),
    );
    const answersB: JsonResponse[] = [];
    for (let n = 0; n < 5; n += 1) {
      // B's n-th request once A has sent 100 for each before it, and at most 10 per second
      // (half of B's rate) however slow the host.
      while (sentA < 100 * n) await sleep(5);
      const next = sleep(100);
      answersB.push(
        await send(server.url, 'POST', `/fair/${idB}/note`, {
          body: { payload: { n } },
          headers: { 'x-tenant': 'b' },
        }),
      );
      await next;
    }
    stop = true;
    await flood;
    const seconds = (Date.now() - started) / 1000;
    expect(answersB.map((answer) => answer.status)).toEqual(Array(5).fill(200));
    expect((await runtime.store.load(idB))!.context['notes']).toBe(5);
    const granted = answersA.filter((answer) => answer.status === 200);
    const refused = answersA.filter((answer) => answer.status !== 200);
    expect(sentA).toBeGreaterThanOrEqual(400);
    expect(refused.length).toBeGreaterThan(0);
    for (const answer of refused) {
      expect(answer.status).toBe(429);
      expectDocumentedRefusal(answer, (answer.body as { limit: string }).limit);
    }
    // A token bucket of 20 per second lets at most 20 through at once, then 20 a second.
    expect(granted.length).toBeLessThanOrEqual(20 + Math.ceil(20 * seconds));
  }, 120_000);
});

/** The limits of one tenant, shared by two server processes. */
const SHARED: RegistrationOptions = {
  prefix: 'shared',
  name: 'shared',
  create: true,
  machineIdFor: ['NOTE'],
  only: ['NOTE'],
  flow: {
    NOTE: { key: { header: 'x-tenant' }, concurrency: 2, rate: { limit: 6, interval: 60_000 } },
  },
};
const SHARED_ARCHIVES: RegistrationOptions = {
  ...ARCHIVES,
  prefix: 'shared/archives',
  name: 'shared_archives',
};
const SHARED_DEBOUNCE: RegistrationOptions = {
  ...DEBOUNCED,
  prefix: 'shared/debounced',
  name: 'shared_debounced',
};

describe.skipIf(postgres === null)('flow control across two server processes on PostgreSQL', () => {
  const backend = postgres!;
  const processes = useServerProcesses(
    backend,
    SERVER,
    [JSON.stringify([SHARED, SHARED_DEBOUNCE, SHARED_ARCHIVES])],
    { timeoutMs: 90_000 },
  );
  const { urls } = processes;

  it('should share a tenant rate between the processes', async () => {
    const [one, two] = urls as [string, string];
    const id = await created(one, 'shared');
    const statuses: number[] = [];
    for (let index = 0; index < 10; index += 1) {
      const answer = await send(index % 2 === 0 ? one : two, 'POST', `/shared/${id}/note`, {
        body: { payload: { n: index } },
        headers: { 'x-tenant': 'rate' },
      });
      if (answer.status !== 200) expectDocumentedRefusal(answer, 'rate');
      statuses.push(answer.status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429, 429, 429]);
    expect((await processes.runtime.store.load(id))!.context['notes']).toBe(6);
  });

  it('should share in-flight slots between the processes', async () => {
    const [one, two] = urls as [string, string];
    const ids = await Promise.all(Array.from({ length: 6 }, () => created(one, 'shared')));
    const answers = await Promise.all(
      ids.map((id, index) =>
        send(index % 2 === 0 ? one : two, 'POST', `/shared/${id}/note`, {
          body: { payload: { n: index } },
          headers: { 'x-tenant': 'slots', 'x-delay-ms': '2000' },
        }),
      ),
    );
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(2);
    for (const answer of answers.filter((answer) => answer.status !== 200))
      expectDocumentedRefusal(answer, 'concurrency');
  });

  it('should let at most two instances into a state across the processes', async () => {
    const [one, two] = urls as [string, string];
    const ids = await Promise.all(Array.from({ length: 6 }, () => created(one, 'shared/archives')));
    const answers = await Promise.all(
      ids.map((id, index) =>
        send(index % 2 === 0 ? one : two, 'POST', `/shared/archives/${id}/archive`),
      ),
    );
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(2);
    for (const answer of answers.filter((answer) => answer.status !== 200))
      expectDocumentedRefusal(answer, 'instances');
  });

  it('should send only the last of a burst spread over both processes', async () => {
    const [one, two] = urls as [string, string];
    const id = await created(one, 'shared/debounced');
    const burst: Promise<JsonResponse>[] = [];
    for (let n = 1; n <= 4; n += 1) {
      burst.push(
        send(n % 2 === 0 ? one : two, 'POST', `/shared/debounced/${id}/note`, {
          body: { payload: { n } },
        }),
      );
      await sleep(50);
    }
    const answers = await Promise.all(burst);
    expect(answers.map((answer) => answer.status)).toEqual([429, 429, 429, 200]);
    expect((await processes.runtime.store.load(id))!.context['seen']).toEqual([4]);
  });
});
