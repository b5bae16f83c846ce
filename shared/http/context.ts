import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { Request } from '@middy/core';
import type { Operation } from './operation';
import type { Caller } from '../domain/api-keys/authenticate';

/** The caller as established by API-key authentication (declared where authentication makes it). */
export type { Caller };

/** Per-request state the middlewares share; lives on `request.internal.http`. */
export interface HttpState {
  operation: Operation;
  requestId: string;
  startedAt: number;
  caller?: Caller;
  /** Parsed JSON body (undefined when the request had none). */
  body?: unknown;
  input: { params: unknown; query: unknown; body: unknown };
  /** Headers every response of this request carries (request id, rate limits, CORS…). */
  responseHeaders: Record<string, string>;
}

export type HttpRequest = Request<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Context, { http?: HttpState }>;

/** The shared state of a request; created by the request-context middleware. */
export function httpState(request: HttpRequest): HttpState {
  const state = request.internal.http;
  if (!state) throw new Error('request-context middleware must run first');
  return state;
}

/** Case-insensitive header read (declared below HTTP, as areas that check a request themselves read headers too). */
export { header } from '../domain/common/header';

const byEvent = new WeakMap<object, HttpState>();

/** Links the state to the event so the plain handler function (which middy gives only the event) can reach it. */
export function bindState(event: object, state: HttpState): void {
  byEvent.set(event, state);
}

/** The state bound to an event by `bindState`. */
export function stateOf(event: object): HttpState {
  const state = byEvent.get(event);
  if (!state) throw new Error('no request state bound to this event');
  return state;
}
