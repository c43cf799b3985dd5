/**
 * The quick path of a stateless event route with nothing else to run (no middleware, action
 * hooks, scenarios, contention options or Idempotency-Key claim): spec "Request handling order"
 * steps 3, 5 and 9 answered at once unless the payload schema or the available events are
 * asynchronous. event-handler.ts decides when a route takes it.
 */
import { MachineAlreadyRunningException } from '../errors.js';
import type { EventObject, MachineDefinitionBase } from '../definition/types.js';
import type { MachineSnapshot } from '../interpreter/types.js';
import type { InstanceResult, SendOptions } from '../persistence/types.js';
import type { EventAnswer } from './event-response.js';
import { isRead } from './request-data.js';
import { type ImmediateAnswer } from './handler-forms.js';
import { validationResponse } from './response-bodies.js';
import type { RouteInstance } from './route-instance.js';
import type { EndpointRequest, EndpointResponse } from './types.js';
import { payloadPlacementHint, type PayloadValidation } from './validation-errors.js';

/** The send options of a stateless request without a scenario (only read). */
export const STATELESS_SEND: SendOptions = Object.freeze({ keepHistory: false });

/** The instance of every stateless request (only read). */
export const STATELESS: RouteInstance = Object.freeze({ kind: 'stateless' });

/** A synchronous stateless send (`MachineInstances.sendStatelessSync`, bound). */
export type StatelessSend<D extends MachineDefinitionBase = MachineDefinitionBase> = (
  definition: D,
  event: EventObject,
  options?: SendOptions,
) => InstanceResult;

/** What the quick path shares with the route's full handler, made once per route. */
export interface StatelessRoute<D extends MachineDefinitionBase> {
  definition: D;
  eventType: string;
  /** The route's success status. */
  status: number;
  /** Step 3: the payload read from the request and validated. */
  validate: (request: EndpointRequest) => PayloadValidation | Promise<PayloadValidation>;
  /** Step 9: the route's answer. */
  respond: (answer: EventAnswer) => EndpointResponse | Promise<EndpointResponse>;
  /** Step 6: the contention answer. */
  contended: (
    error: MachineAlreadyRunningException,
    request: EndpointRequest,
    instance: RouteInstance,
    pre: MachineSnapshot | null,
    event: EventObject,
  ) => Promise<EndpointResponse>;
  /** An escaped error as its response. */
  failure: (error: unknown, request: EndpointRequest) => EndpointResponse;
}

/**
 * The quick path's answer of one request, given the route's send. Its functions are made here
 * once per route: a request allocates no closures of its own.
 */
export function createStatelessAnswer<D extends MachineDefinitionBase>({
  definition,
  eventType,
  status,
  validate,
  respond,
  contended,
  failure,
}: StatelessRoute<D>): (request: EndpointRequest, send: StatelessSend<D>) => ImmediateAnswer {
  /** Steps 5 and 9 of a stateless request whose payload passed or failed validation. */
  const sendStateless = (
    request: EndpointRequest,
    validation: PayloadValidation,
    send: StatelessSend<D>,
  ): EndpointResponse | Promise<EndpointResponse> => {
    if (!validation.ok)
      return validationResponse(
        validation.errors,
        isRead(request) ? undefined : payloadPlacementHint(request.body),
      );
    const event: EventObject = { type: eventType, payload: validation.payload };
    let result: InstanceResult;
    try {
      result = send(definition, event, STATELESS_SEND);
    } catch (error) {
      // What the full handler (`handle`) does with it; a runtime of the library never throws it here.
      if (error instanceof MachineAlreadyRunningException)
        return contended(error, request, STATELESS, null, event);
      throw error;
    }
    return respond({
      snapshot: result.snapshot,
      status,
      isProcessing: false,
      event,
      kept: result.scenario ?? null,
      reached: result.forwardedChild,
    });
  };

  /**
   * Steps 3, 5 and 9 of the full handler (`handle`, event-handler.ts) for a stateless route with nothing else to run: no
   * middleware, action hooks, scenarios, contention options or Idempotency-Key claim. A plain
   * function that answers at once unless the payload schema or the available events are
   * asynchronous: `handle`'s async frame holds every local of the whole lifecycle, the largest
   * single allocation of a stateless request. No closure either (one capturing `request` would
   * cost a context per call, made or not).
   */
  const answerStateless = (request: EndpointRequest, send: StatelessSend<D>): ImmediateAnswer => {
    let answer: ImmediateAnswer;
    try {
      const validation = validate(request);
      answer =
        validation instanceof Promise
          ? validatedLater(request, validation, send)
          : sendStateless(request, validation, send);
    } catch (error) {
      return failure(error, request);
    }
    return answer instanceof Promise ? settled(request, answer) : answer;
  };

  const validatedLater = async (
    request: EndpointRequest,
    validation: Promise<PayloadValidation>,
    send: StatelessSend<D>,
  ): Promise<EndpointResponse> => sendStateless(request, await validation, send);

  /** An answer that is a promise (async schema, async available events), errors answered. */
  const settled = async (
    request: EndpointRequest,
    answer: Promise<EndpointResponse>,
  ): Promise<EndpointResponse> => {
    try {
      return await answer;
    } catch (error) {
      return failure(error, request);
    }
  };

  return answerStateless;
}
