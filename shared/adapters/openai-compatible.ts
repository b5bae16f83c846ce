import { readSecretJson } from './secret-json';

/**
 * What the two OpenAI-compatible adapters (the conversation model, post-call analysis) share: the
 * API key's source and how a provider's HTTP failure is read. Each adapter wraps these in its own
 * error class, so the reasons stay its own.
 */

/** The most of a provider's error message kept in ours. */
export const MAX_PROVIDER_MESSAGE = 300;

/**
 * An API key read from a Secrets Manager secret (`<arnVariable>`, JSON `{"api_key": "..."}`, once
 * per container) or from `<keyVariable>` (local). A failed read is not cached: the next call tries
 * again. `notConfigured` turns each failure into the adapter's own error.
 */
export function apiKeySource(settings: {
  providerVariable: string;
  arnVariable: string;
  keyVariable: string;
  /** "The model API key", "The analysis API key". */
  what: string;
  notConfigured: (message: string, cause?: unknown) => Error;
}): { read: () => Promise<string>; reset: () => void } {
  let cached: Promise<string> | undefined;
  const own = new WeakSet<object>();
  const fail = (message: string) => {
    const err = settings.notConfigured(message);
    own.add(err);
    return err;
  };
  const read = () =>
    (cached ??= (async () => {
      const arn = process.env[settings.arnVariable];
      if (arn) {
        const value = (await readSecretJson(arn)) as { api_key?: string };
        if (!value.api_key) throw fail(`Secret ${arn} must hold JSON {"api_key": "..."}`);
        return value.api_key;
      }
      const key = process.env[settings.keyVariable];
      if (!key) throw fail(`${settings.providerVariable}=openai needs ${settings.arnVariable} (deployed) or ${settings.keyVariable} (local).`);
      return key;
    })().catch((err: unknown) => {
      cached = undefined; // a failed read is retried by the next request
      throw err instanceof Error && own.has(err) ? err : settings.notConfigured(`${settings.what} could not be read`, err);
    }));
  return { read, reset: () => void (cached = undefined) };
}

/** The reason a provider's non-2xx answer stands for, and its error message (the documented error JSON's, cut), when it gave one. */
export function providerFailure(status: number, body: string): { reason: 'rate_limited' | 'provider_error' | 'unauthorized' | 'rejected'; said: string } {
  let message = '';
  try {
    message = String((JSON.parse(body) as { error?: { message?: unknown } }).error?.message ?? '');
  } catch {
    // Not the documented error JSON: keep the status only.
  }
  const reason = status === 429 ? 'rate_limited' : status >= 500 ? 'provider_error' : status === 401 || status === 403 ? 'unauthorized' : 'rejected';
  return { reason, said: message ? `: ${message.slice(0, MAX_PROVIDER_MESSAGE)}` : '' };
}
