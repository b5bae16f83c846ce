import { http } from '../../shared/http/handler';
import { updateWidgetSettings as op } from '../../shared/domain/widgets/operations';
import { updateWidgetSettings } from '../../shared/domain/widgets/service';

export const handler = http(op, ({ caller, params, body }) => updateWidgetSettings(caller.organizationId, params.id, body));
