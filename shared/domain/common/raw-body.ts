/**
 * A response body that is not JSON (TwiML for the carrier, the widget's script, the reference
 * page), returned by a `rawResponse` operation. The areas that answer such documents build it
 * here, below HTTP; the success-envelope middleware (shared/http/middleware/success-envelope.ts)
 * recognizes it by its marker and sends it as it is.
 */

const RAW = Symbol('raw');

export interface RawBody {
  [RAW]: true;
  contentType: string;
  body: string;
  /** 200 unless given (304 for a script the browser already holds). */
  statusCode?: number;
  /** `body` is base64 of bytes (a gzip-encoded script). */
  base64?: boolean;
}

export function rawBody(contentType: string, body: string, options: { statusCode?: number; base64?: boolean } = {}): RawBody {
  return { [RAW]: true, contentType, body, ...options };
}

export function isRawBody(value: unknown): value is RawBody {
  return typeof value === 'object' && value !== null && RAW in value;
}
