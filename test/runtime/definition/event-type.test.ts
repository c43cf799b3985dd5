import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  InvalidEventDefinitionException,
  MachineEvent,
  defineEvent,
  deriveEventType,
  eventTypeOf,
  isReservedEventType,
  isUserEventType,
  toEventDefinition,
} from '../../../src/runtime/index.js';

class ConsentGrantedEvent extends MachineEvent {
  static override readonly payload = z.object({ at: z.string() });
}

class RenamedEvent extends MachineEvent {
  static override readonly type = 'EXPLICIT_TYPE';
}

describe('deriveEventType', () => {
  it.each([
    ['ConsentGrantedEvent', 'CONSENT_GRANTED'],
    ['OrderSubmitted', 'ORDER_SUBMITTED'],
    ['AbortEvent', 'ABORT'],
    ['HTTPRequestEvent', 'HTTP_REQUEST'],
    ['provideCard', 'PROVIDE_CARD'],
    ['Step2Done', 'STEP2_DONE'],
  ])('should derive %s -> %s', (name, type) => {
    expect(deriveEventType(name)).toBe(type);
  });
});

describe('defineEvent', () => {
  it('should keep an explicit type and the payload schema', () => {
    const payload = z.object({ amount: z.number() });

    expect(defineEvent({ type: 'SUBMIT', payload })).toEqual({
      kind: 'event',
      type: 'SUBMIT',
      payload,
    });
  });

  it('should derive the type from the name when no type is given', () => {
    expect(defineEvent({ name: 'OrderApprovedEvent' })).toEqual({
      kind: 'event',
      type: 'ORDER_APPROVED',
      payload: undefined,
    });
  });

  it('should let an explicit type win over the name', () => {
    expect(defineEvent({ name: 'OrderApprovedEvent', type: 'APPROVE' }).type).toBe('APPROVE');
  });

  it.each([['@done'], ['@always'], ['submit'], ['Submit-Order'], ['']])(
    'should reject the type %j',
    (type) => {
      expect(() => defineEvent({ type })).toThrow(InvalidEventDefinitionException);
    },
  );

  it('should reject a definition with neither type nor name', () => {
    expect(() => defineEvent({})).toThrow(
      expect.objectContaining({ code: 'MR_INVALID_EVENT_DEFINITION' }),
    );
  });
});

describe('MachineEvent', () => {
  it('should derive the type from the class name', () => {
    expect(eventTypeOf(ConsentGrantedEvent)).toBe('CONSENT_GRANTED');
  });

  it('should let static type win over the class name', () => {
    expect(eventTypeOf(RenamedEvent)).toBe('EXPLICIT_TYPE');
  });

  it('should normalize to an event definition carrying the static payload', () => {
    expect(toEventDefinition(ConsentGrantedEvent)).toEqual({
      kind: 'event',
      type: 'CONSENT_GRANTED',
      payload: ConsentGrantedEvent.payload,
    });
  });
});

describe('eventTypeOf', () => {
  it.each([
    ['a type string', 'SUBMIT', 'SUBMIT'],
    ['an event definition', defineEvent({ type: 'PAY' }), 'PAY'],
    ['an event class', ConsentGrantedEvent, 'CONSENT_GRANTED'],
  ])('should accept %s', (_label, reference, type) => {
    expect(eventTypeOf(reference)).toBe(type);
  });

  it('should reject something that is no event reference', () => {
    expect(() => eventTypeOf(42 as never)).toThrow(InvalidEventDefinitionException);
  });
});

describe('isUserEventType', () => {
  it.each([
    ['SUBMIT', true],
    ['ORDER_SUBMITTED_2', true],
    ['@always', false],
    ['submit', false],
    ['_SUBMIT', false],
    ['SUBMIT__ORDER', false],
  ])('should tell %s -> %s', (type, expected) => {
    expect(isUserEventType(type)).toBe(expected);
  });
});

describe('isReservedEventType', () => {
  it.each([
    ['@always', true],
    ['@done', true],
    ['@done.approved', true],
    ['@fail', true],
    ['@timeout', true],
    ['@done.', false],
    ['@finish', false],
  ])('should tell %s -> %s', (type, expected) => {
    expect(isReservedEventType(type)).toBe(expected);
  });
});
