import { PayloadTooLargeError, ValidationError } from '../../errors';
import { header, httpState } from '../context';
import type { HttpMiddleware } from './types';

const defaults = { maxBytes: 1_048_576 };

/**
 * Parses a JSON body. A body must be sent as `application/json` (or `+json`), must parse and
 * must fit `maxBytes`; each failure is a 4xx naming what was wrong.
 */
export function jsonBody(options: Partial<typeof defaults> = {}): HttpMiddleware {
  const { maxBytes } = { ...defaults, ...options };
  return {
    name: 'json-body',
    before: (request) => {
      const state = httpState(request);
      const raw = request.event.body;
      if (raw === undefined || raw === null || raw === '') return;
      const text = request.event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
      if (Buffer.byteLength(text, 'utf8') > maxBytes) throw new PayloadTooLargeError(maxBytes);
      const type = (header(request.event, 'content-type') ?? '').toLowerCase();
      if (!/^application\/([a-z0-9.+-]*\+)?json\b/.test(type.trim())) {
        throw new ValidationError('Content-Type must be application/json', [
          { path: 'content-type', message: `expected application/json, got "${type || 'none'}"` },
        ]);
      }
      try {
        state.body = JSON.parse(text);
      } catch (err) {
        throw new ValidationError('Malformed JSON body', [{ path: 'body', message: (err as Error).message }]);
      }
    },
  };
}
