import { http } from '../../shared/http/handler';
import { startWidgetCall as op } from '../../shared/domain/widgets/operations';
import { startWidgetCall } from '../../shared/domain/widgets/public-web-calls';
import { publicCall } from '../../shared/domain/widgets/public-call';

export const handler = http(op, ({ params, body, event, setHeader }) => startWidgetCall(publicCall(params.id, event, setHeader), body ?? {}));
