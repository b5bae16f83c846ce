import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Twilio's request signature (`X-Twilio-Signature`), as Twilio documents it under "Validating
 * requests": take the full URL Twilio requested (scheme, host, path and query string exactly as
 * configured), append each POST parameter as its name immediately followed by its value, the
 * parameters sorted by name, no separators; HMAC-SHA1 that string with the account's auth token
 * as the key; base64 of the digest is the signature.
 */
export function twilioSignature(authToken: string, url: string, params: Record<string, string>): string {
  let data = url;
  // Twilio sorts by name in byte order; parameter names are ASCII, where UTF-16 order is the same.
  for (const name of Object.keys(params).sort()) data += name + params[name];
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

const DEFAULT_PORTS: Record<string, string> = { http: '80', https: '443' };

/** The URL as given, and with its scheme's default port added or removed (Twilio may sign either form). */
function portVariants(url: string): string[] {
  const match = /^(https?):\/\/([^/?#]*?)(?::(\d+))?([/?#].*)?$/i.exec(url);
  if (!match) return [url];
  const [, scheme, host, port, rest = ''] = match;
  const defaultPort = DEFAULT_PORTS[scheme.toLowerCase()];
  if (port === undefined) return [url, `${scheme}://${host}:${defaultPort}${rest}`];
  return port === defaultPort ? [url, `${scheme}://${host}${rest}`] : [url];
}

/**
 * True when `signature` is Twilio's signature of this request. The comparison is constant-time.
 * Like Twilio's own helper libraries, it also accepts a signature made over the URL with the
 * scheme's default port added or removed (https://host:443/… for https://host/…), because the
 * URL Twilio signed may carry it while the one the request arrived on does not, or the reverse.
 */
export function verifyTwilioSignature(authToken: string, url: string, params: Record<string, string>, signature: string): boolean {
  if (!authToken || !signature) return false;
  const given = Buffer.from(signature, 'utf8');
  let valid = false;
  for (const candidate of portVariants(url)) {
    const expected = Buffer.from(twilioSignature(authToken, candidate, params), 'utf8');
    // A SHA-1 digest in base64 is always 28 characters: only a malformed header differs in length.
    if (expected.length === given.length && timingSafeEqual(expected, given)) valid = true;
  }
  return valid;
}
