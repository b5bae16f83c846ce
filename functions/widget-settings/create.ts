import { http } from '../../shared/http/handler';
import { createWidgetSettings as op } from '../../shared/domain/widgets/operations';
import { createWidgetSettings } from '../../shared/domain/widgets/service';

export const handler = http(op, ({ caller, body }) => createWidgetSettings(caller.organizationId, body));
