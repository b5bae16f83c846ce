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

/** The most of a provider's own message an API answer quotes (`error.details.provider_message`). */
export const MAX_PROVIDER_DETAIL = 500;

/**
 * A provider's message with anything that looks like a credential blanked: OpenAI quotes a key it
 * refused (`Incorrect API key provided: sk-abc***xyz`), and ours must never reach an API answer.
 */
export function redactSecrets(text: string, secrets: string[] = []): string {
  let out = text;
  for (const secret of secrets) if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
  return out
    .replace(/\b(sk|pk|rk|ak|key|token|gsk|xai)[-_][A-Za-z0-9_*\-]{4,}/gi, '[redacted]')
    .replace(/\bBearer\s+\S+/gi, 'Bearer [redacted]')
    .replace(/\b[A-Za-z0-9_\-]{32,}\b/g, '[redacted]');
}

/**
 * The reason a provider's non-2xx answer stands for, its error message (the documented error
 * JSON's, cut to MAX_PROVIDER_MESSAGE for our logs and messages as `said`, and to
 * MAX_PROVIDER_DETAIL, credentials blanked, as `message`) and its error `code` when it gave them.
 */
export function providerFailure(status: number, body: string, secrets: string[] = []): { reason: 'rate_limited' | 'provider_error' | 'unauthorized' | 'rejected'; said: string; message: string; code?: string } {
  let message = '';
  let code: string | undefined;
  try {
    const error = (JSON.parse(body) as { error?: { message?: unknown; code?: unknown } }).error;
    message = String(error?.message ?? '');
    if (typeof error?.code === 'string' && error.code) code = error.code;
  } catch {
    // Not the documented error JSON: keep the status only.
  }
  const reason = status === 429 ? 'rate_limited' : status >= 500 ? 'provider_error' : status === 401 || status === 403 ? 'unauthorized' : 'rejected';
  const clean = redactSecrets(message, secrets);
  return { reason, said: clean ? `: ${clean.slice(0, MAX_PROVIDER_MESSAGE)}` : '', message: clean.slice(0, MAX_PROVIDER_DETAIL), ...(code ? { code } : {}) };
}
