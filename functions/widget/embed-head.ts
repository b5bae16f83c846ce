import { http } from '../../shared/http/handler';
import { header } from '../../shared/http/context';
import { headWidgetEmbedScript as op } from '../../shared/domain/widgets/operations';
import { serveEmbedScript } from '../../shared/domain/widgets/embed-script';

// HEAD gets GET's answer; the HTTP layer sends its headers and drops the body (embed-script.ts).
export const handler = http(op, async ({ event, setHeader }) => {
  const { body, headers } = await serveEmbedScript(header(event, 'if-none-match'), header(event, 'accept-encoding'));
  Object.entries(headers).forEach(([name, value]) => setHeader(name, value));
  return body;
});
