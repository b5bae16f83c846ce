import { http } from '../../shared/http/handler';
import { header } from '../../shared/http/context';
import { getWidgetConfig as op } from '../../shared/domain/widgets/operations';
import { getPublicWidgetConfig } from '../../shared/domain/widgets/public-config';

export const handler = http(op, async ({ params, event, setHeader }) => {
  const { config, headers } = await getPublicWidgetConfig(params.id, header(event, 'origin'), setHeader);
  Object.entries(headers).forEach(([name, value]) => setHeader(name, value));
  return config;
});
