import { UnauthorizedError } from '../../errors';
import { header, httpState } from '../context';
import { authenticate } from '../../domain/api-keys/authenticate';
import type { HttpMiddleware } from './types';

/**
 * API-key authentication: `X-Api-Key` must name a live key; the key decides the caller's
 * organization. The key itself never reaches a log line.
 */
export function apiKeyAuth(options: { lookup?: typeof authenticate } = {}): HttpMiddleware {
  const lookup = options.lookup ?? authenticate;
  return {
    name: 'api-key-auth',
    before: async (request) => {
      const state = httpState(request);
      const key = header(request.event, 'x-api-key');
      if (!key) throw new UnauthorizedError('Missing API key: send it in the X-Api-Key header');
      const caller = await lookup(key.trim());
      if (!caller) throw new UnauthorizedError('Invalid, revoked or expired API key');
      state.caller = caller;
    },
  };
}
