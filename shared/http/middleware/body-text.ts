import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { PayloadTooLargeError } from '../../errors';

/**
 * The request body as UTF-8 text (API Gateway may send it base64-encoded), or undefined when
 * there is none; a body over `maxBytes` is a 413. Shared by the JSON and the form parsers.
 */
export function bodyText(event: APIGatewayProxyEventV2, maxBytes: number): string | undefined {
  const raw = event.body;
  if (raw === undefined || raw === null || raw === '') return undefined;
  const text = event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw;
  if (Buffer.byteLength(text, 'utf8') > maxBytes) throw new PayloadTooLargeError(maxBytes);
  return text;
}
