import { http } from '../../shared/http/handler';
import { getWidgetSettings as op } from '../../shared/domain/widgets/operations';
import { getWidgetSettings } from '../../shared/domain/widgets/service';

export const handler = http(op, ({ caller, params }) => getWidgetSettings(caller.organizationId, params.id));
