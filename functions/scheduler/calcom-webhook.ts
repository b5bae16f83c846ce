import { http } from '../../shared/http/handler';
import { header } from '../../shared/http/context';
import { calcomWebhook as op } from '../../shared/domain/appointments/operations';
import { receiveCalcomWebhook } from '../../shared/domain/appointments/service';

// The signature covers the raw body exactly as sent, so it is checked on that, not on the parsed JSON.
const rawBody = (body: string | undefined, base64?: boolean) => (base64 ? Buffer.from(body ?? '', 'base64').toString('utf8') : (body ?? ''));

export const handler = http(op, ({ params, body, event }) =>
  receiveCalcomWebhook(params.org_id, rawBody(event.body, event.isBase64Encoded), header(event, 'x-cal-signature-256'), body),
);
