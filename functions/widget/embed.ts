import { http } from '../../shared/http/handler';
import { header } from '../../shared/http/context';
import { getWidgetEmbedScript as op } from '../../shared/domain/widgets/operations';
import { serveEmbedScript } from '../../shared/domain/widgets/embed-script';

export const handler = http(op, async ({ event, setHeader }) => {
  const { body, headers } = await serveEmbedScript(header(event, 'if-none-match'), header(event, 'accept-encoding'));
  Object.entries(headers).forEach(([name, value]) => setHeader(name, value));
  return body;
});
