/**
 * A forwarded event reaching a pinned child (docs/versioning.md): a `form` child started on v1
 * (by a process running v1 of the child machine) takes a parent's forwarded SUBMIT on v1 once
 * the process runs v2 of `form` with v1 pinned; v2's SUBMIT goes elsewhere. With the durable
 * queue running (the child starts through a job), on a SQLite file and PostgreSQL. On the code
 * before, the child ran v2's transition (`form.reviewed`, recorded as v2).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  MachineRuntime,
  defineMachine,
  type MachineDefinition,
} from '../../../src/runtime/index.js';
import { durableBackends } from '../../support/durable-backends.js';

const backends = await durableBackends('versioning/pinned-forward');
const DEADLINE = { timeout: 30_000, interval: 25 };

const formV1 = defineMachine({
  config: {
    id: 'form',
    version: 'f1',
    initial: 'editing',
    states: { editing: { on: { SUBMIT: 'submitted' } }, submitted: { type: 'final' } },
  },
});

const formV2 = defineMachine({
  config: {
    id: 'form',
    version: 'f2',
    initial: 'editing',
    states: {
      editing: { on: { SUBMIT: 'reviewed' } },
      reviewed: { on: { ACCEPT: 'submitted' } },
      submitted: { type: 'final' },
    },
  },
  versioning: 'pin',
  previous: [formV1],
});

/** The parent, delegating to `form` (one definition of it per process) and forwarding SUBMIT. */
const caseOf = (form: MachineDefinition) =>
  defineMachine({
    config: {
      id: 'case',
      version: 'c1',
      initial: 'filling',
      states: {
        filling: { machine: form, queue: true, forward: ['SUBMIT'], on: { '@done': 'closed' } },
        closed: { type: 'final' },
      },
    },
  });

describe.each(backends)('a forwarded event to a pinned child on $name', (backend) => {
  let url: string;
  let runtime: MachineRuntime | undefined;
  const open = (machine: MachineDefinition) =>
    MachineRuntime.open({
      databaseUrl: url,
      migrate: true,
      machines: [machine],
      jobQueue: { pollIntervalMs: 20, backoffMs: 0 },
    });
  beforeAll(async () => {
    url = await backend.setUp();
  }, 60_000);
  afterAll(async () => {
    await runtime?.close();
    await backend.tearDown();
  });

  it("should run the forwarded event on the child's own version", async () => {
    const caseV1 = caseOf(formV1);
    const v1 = await open(caseV1);
    const parent = (await v1.create(caseV1)).snapshot.id;
    const [row] = await vi.waitFor(async () => {
      const rows = await v1.children(parent);
      expect(rows[0]?.status).toBe('running');
      return rows;
    }, DEADLINE);
    await v1.close();

    const caseV2 = caseOf(formV2);
    runtime = await open(caseV2);
    expect((await runtime.read(formV2, row!.id)).snapshot.version).toBe('f1');
    await runtime.send(caseV2, parent, { type: 'SUBMIT' });
    const child = (await runtime.read(formV2, row!.id)).snapshot;
    expect(child).toMatchObject({ value: ['form.submitted'], version: 'f1', status: 'done' });
    await vi.waitFor(async () => {
      expect((await runtime!.read(caseV2, parent)).snapshot.value).toEqual(['case.closed']);
    }, DEADLINE);
  }, 60_000);
});
