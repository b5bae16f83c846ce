import { http } from '../../shared/http/handler';
import { deleteWidgetSettings as op } from '../../shared/domain/widgets/operations';
import { deactivateWidgetSettings } from '../../shared/domain/widgets/service';

export const handler = http(op, ({ caller, params }) => deactivateWidgetSettings(caller.organizationId, params.id));
