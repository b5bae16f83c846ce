import { UnauthorizedError } from '../../errors';
import { header, httpState } from '../context';
import { authenticate, flushApiKeyUsage } from '../../domain/api-keys/authenticate';
import type { HttpMiddleware } from './types';

/**
 * API-key authentication: `X-Api-Key` must name a live key; the key decides the caller's
 * organization. The key itself never reaches a log line. On the way out (answer or error) it
 * waits, briefly and bounded, for the key's last-used stamp to be sent: Lambda may freeze the
 * process as soon as the response is returned.
 */
export function apiKeyAuth(options: { lookup?: typeof authenticate; flush?: () => Promise<void> | undefined } = {}): HttpMiddleware {
  const lookup = options.lookup ?? authenticate;
  const flush = options.flush ?? flushApiKeyUsage;
  const settle = async () => {
    await flush();
  };
  return {
    after: settle,
    onError: settle,
    name: 'api-key-auth',
    before: async (request) => {
      const state = httpState(request);
      // The OpenAI-compatible paths take the key as OpenAI's SDKs send it, too.
      const bearer = state.operation.openAiCompatible ? /^Bearer\s+(\S+)\s*$/i.exec(header(request.event, 'authorization') ?? '')?.[1] : undefined;
      const key = header(request.event, 'x-api-key') || bearer;
      if (!key) throw new UnauthorizedError(state.operation.openAiCompatible ? 'Missing API key: send it as Authorization: Bearer <key> or in the X-Api-Key header' : 'Missing API key: send it in the X-Api-Key header');
      const caller = await lookup(key.trim());
      if (!caller) throw new UnauthorizedError('Invalid, revoked or expired API key');
      state.caller = caller;
    },
  };
}
