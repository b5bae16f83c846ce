import { http } from '../../shared/http/handler';
import { listWidgetSettings as op } from '../../shared/domain/widgets/operations';
import { listWidgetSettings } from '../../shared/domain/widgets/service';

export const handler = http(op, ({ caller, query }) => listWidgetSettings(caller.organizationId, query));
