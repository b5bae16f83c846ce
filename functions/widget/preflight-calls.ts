import { http } from '../../shared/http/handler';
import { header } from '../../shared/http/context';
import { preflightWidgetCalls as op } from '../../shared/domain/widgets/operations';
import { preflightWidgetConfig } from '../../shared/domain/widgets/public-config';

export const handler = http(op, async ({ params, event, setHeader }) => {
  const headers = await preflightWidgetConfig(params.id, header(event, 'origin'), 'POST, OPTIONS');
  Object.entries(headers).forEach(([name, value]) => setHeader(name, value));
});
