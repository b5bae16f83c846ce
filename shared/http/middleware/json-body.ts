import { ValidationError } from '../../errors';
import { bodyText } from './body-text';
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
      const text = bodyText(request.event, maxBytes);
      if (text === undefined) return;
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
      // DynamoDB stores UTF-8, which cannot hold a lone surrogate (most arrive as \u escapes).
      const bad = /\\u[dD][89a-fA-F]/.test(text) || LONE_SURROGATE.test(text) ? loneSurrogatePath(state.body) : undefined;
      if (bad !== undefined) throw ValidationError.field(bad || 'body', 'must be well-formed Unicode (a lone surrogate \\uD800–\\uDFFF cannot be stored)');
    },
  };
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The dotted path of the first key or string holding a lone surrogate ('' for the body itself); undefined if none. */
function loneSurrogatePath(body: unknown): string | undefined {
  const stack: { value: unknown; path: string[] }[] = [{ value: body, path: [] }];
  while (stack.length) {
    const { value, path } = stack.pop()!;
    if (typeof value === 'string' && LONE_SURROGATE.test(value)) return path.join('.');
    if (value === null || typeof value !== 'object') continue;
    for (const [key, child] of Object.entries(value)) {
      if (LONE_SURROGATE.test(key)) return [...path, key].join('.');
      stack.push({ value: child, path: [...path, key] });
    }
  }
  return undefined;
}
