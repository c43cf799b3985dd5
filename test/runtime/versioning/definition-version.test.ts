/**
 * A definition's version (docs/versioning.md): explicit `version`, else a fingerprint of its
 * structure, stable across processes and key order, changed by what stored instances depend on.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineMachine } from '../../../src/runtime/definition/index.js';
import type { MachineConfig } from '../../../src/runtime/definition/types.js';

const config = (): MachineConfig => ({
  id: 'loan',
  initial: 'applied',
  context: { amount: 0, note: '' },
  states: {
    applied: { on: { APPROVE: 'approved', REJECT: 'rejected' } },
    approved: { on: { PAY: { target: 'paid', guards: 'enough' } } },
    paid: { type: 'final' },
    rejected: { type: 'final' },
  },
});
const behavior = { guards: { enough: () => true } };

describe('machine versions', () => {
  it('is a fingerprint of the structure when no version is given, the same in every process', () => {
    const definition = defineMachine({ config: config(), behavior });
    expect(definition.version).toMatch(/^fp-[0-9a-f]{16}$/);
    // Pinned: a fingerprint that changed between releases would make every stored instance
    // look foreign to the new code (a version fence refusal), so its text is part of the contract.
    expect(definition.version).toBe('fp-da2fcf4120cb3e5a');
  });

  it('does not depend on the order keys are written in', () => {
    const reordered: MachineConfig = {
      states: {
        rejected: { type: 'final' },
        paid: { type: 'final' },
        approved: { on: { PAY: { guards: 'enough', target: 'paid' } } },
        applied: { on: { REJECT: 'rejected', APPROVE: 'approved' } },
      },
      context: { note: '', amount: 0 },
      initial: 'applied',
      id: 'loan',
    };
    expect(defineMachine({ config: reordered, behavior }).version).toBe(
      defineMachine({ config: config(), behavior }).version,
    );
  });

  it('changes when a state is renamed, a transition or a context type changes', () => {
    const base = defineMachine({ config: config(), behavior }).version;
    const renamed = config();
    renamed.states = {
      ...renamed.states,
      approved: undefined as never,
      accepted: { on: { PAY: { target: 'paid', guards: 'enough' } } },
      applied: { on: { APPROVE: 'accepted', REJECT: 'rejected' } },
    };
    delete (renamed.states as Record<string, unknown>).approved;
    const retargeted = config();
    retargeted.states!.applied = { on: { APPROVE: 'approved', REJECT: 'paid' } };
    const retyped = config();
    retyped.context = { amount: '0', note: '' };
    const versions = [renamed, retargeted, retyped].map(
      (changed) => defineMachine({ config: changed, behavior }).version,
    );
    expect(new Set([base, ...versions]).size).toBe(4);
  });

  it('reads a zod context schema as JSON Schema: a key changing type changes the version', () => {
    const withSchema = (amount: z.ZodType) =>
      defineMachine({
        config: {
          ...config(),
          context: z.object({ amount: amount.default(0 as never), note: z.string().default('') }),
        },
        behavior,
      }).version;
    expect(withSchema(z.number())).toBe(withSchema(z.number()));
    expect(withSchema(z.number())).not.toBe(withSchema(z.string()));
  });

  it('takes an explicit version as written', () => {
    expect(defineMachine({ config: { ...config(), version: 'v2' }, behavior }).version).toBe('v2');
    expect(defineMachine({ config: { ...config(), version: 3 }, behavior }).version).toBe('3');
  });

  it('refuses an empty version', () => {
    expect(() => defineMachine({ config: { ...config(), version: '' }, behavior })).toThrow(
      /'version' must be a non-empty string or a number/,
    );
  });
});
