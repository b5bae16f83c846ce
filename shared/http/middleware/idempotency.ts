import { isStreamBody } from '../../domain/common/stream-body';
import { createHash } from 'node:crypto';
import { ConflictError, ValidationError } from '../../errors';
import { header, httpState } from '../context';
import { EarlyResponse } from './error-envelope';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
} from '../../db/idempotency-store';
import type { HttpMiddleware } from './types';

const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;

/** Hash of what makes two requests "the same": the path and the parsed body, canonical order. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]));
  }
  return value;
}

/**
 * `Idempotency-Key` on POST: the first request with a key runs; repeats with the same body
 * replay its answer (marked `Idempotent-Replayed: true`) and do nothing again; the same key
 * with a different body, or while the first is still running, is a 409. Keys are scoped
 * to the organization and operation and kept 24 h. A failed request releases its key.
 */
export function idempotency(options: { leaseMs?: number } = {}): HttpMiddleware {
  const leaseMs = options.leaseMs ?? 60_000;
  const scopeOf = (request: Parameters<NonNullable<HttpMiddleware['before']>>[0]) => {
    const state = httpState(request);
    const key = header(request.event, 'idempotency-key');
    if (!key || request.event.requestContext?.http?.method !== 'POST' || !state.caller) return undefined;
    return { key, state };
  };
  return {
    name: 'idempotency',
    before: async (request) => {
      const scope = scopeOf(request);
      if (!scope) return;
      const { key, state } = scope;
      if (!KEY_SHAPE.test(key)) throw ValidationError.field('idempotency-key', 'must be 1–255 visible ASCII characters');
      const bodyHash = createHash('sha256')
        .update(JSON.stringify([request.event.rawPath?.replace(/\/$/, ''), canonical(state.body ?? null)]))
        .digest('hex');
      const existing = await claimIdempotencyKey(state.caller!.organizationId, state.operation.operationId, key, bodyHash, leaseMs);
      if (!existing) {
        (state as { idempotencyKey?: string }).idempotencyKey = key;
        return;
      }
      if (existing.body_hash !== bodyHash) {
        throw new ConflictError('Idempotency-Key was already used with a different request body', { idempotency_key: key });
      }
      if (existing.status !== 'completed' || !existing.response) {
        throw new ConflictError('A request with this Idempotency-Key is still in progress; retry later', { idempotency_key: key });
      }
      const { contentType, ...response } = existing.response as typeof existing.response & { contentType?: string };
      throw new EarlyResponse({ ...response, headers: { ...(contentType ? { 'content-type': contentType } : {}), 'idempotent-replayed': 'true' } });
    },
    after: async (request) => {
      const state = request.internal.http as { idempotencyKey?: string } & ReturnType<typeof httpState>;
      if (!state?.idempotencyKey || !request.response) return;
      const streamed: unknown = request.response.body;
      if (isStreamBody(streamed)) {
        // A streamed answer is stored once the stream ends, as its plain answer (a repeat gets that JSON); a failed one frees the key.
        const { organizationId } = state.caller!;
        const { operationId } = state.operation;
        const key = state.idempotencyKey;
        streamed.whenDone((plain) =>
          plain.statusCode < 400 ? completeIdempotencyKey(organizationId, operationId, key, plain) : releaseIdempotencyKey(organizationId, operationId, key),
        );
        return;
      }
      await completeIdempotencyKey(state.caller!.organizationId, state.operation.operationId, state.idempotencyKey, {
        statusCode: request.response.statusCode ?? 200,
        body: request.response.body ?? '',
      });
    },
    onError: async (request) => {
      const state = request.internal.http as { idempotencyKey?: string } & ReturnType<typeof httpState>;
      if (!state?.idempotencyKey) return;
      await releaseIdempotencyKey(state.caller!.organizationId, state.operation.operationId, state.idempotencyKey);
    },
  };
}
