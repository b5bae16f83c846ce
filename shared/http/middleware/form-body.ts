import { ValidationError } from '../../errors';
import { bodyText } from './body-text';
import { header, httpState } from '../context';
import type { HttpMiddleware } from './types';

const defaults = { maxBytes: 65_536 };

/**
 * Parses an `application/x-www-form-urlencoded` body into a map of strings, for operations
 * whose callers post forms (carrier callbacks: Twilio signs the form parameters, not a JSON
 * body). A repeated name keeps its last value. Same failures as the JSON body: 413, 400.
 */
export function formBody(options: Partial<typeof defaults> = {}): HttpMiddleware {
  const { maxBytes } = { ...defaults, ...options };
  return {
    name: 'form-body',
    before: (request) => {
      const state = httpState(request);
      const text = bodyText(request.event, maxBytes);
      if (text === undefined) return;
      const type = (header(request.event, 'content-type') ?? '').toLowerCase().trim();
      if (!type.startsWith('application/x-www-form-urlencoded')) {
        throw new ValidationError('Content-Type must be application/x-www-form-urlencoded', [
          { path: 'content-type', message: `expected application/x-www-form-urlencoded, got "${type || 'none'}"` },
        ]);
      }
      state.body = Object.fromEntries(new URLSearchParams(text));
    },
  };
}
